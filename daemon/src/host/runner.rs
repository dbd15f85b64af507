//! The one way the daemon runs external programs (mount, mkfs, smartctl,
//! testparm, ...): an argument vector, never a shell string; a timeout, so a
//! hung USB disk cannot hang the daemon; stderr kept for the error message.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{program} is not installed (not found in PATH)")]
    NotInstalled { program: String },
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("{program} did not finish within {} s and was killed", timeout.as_secs())]
    Timeout { program: String, timeout: Duration },
    #[error("{program} failed ({status}): {stderr}")]
    Failed {
        program: String,
        status: String,
        stderr: String,
    },
}

/// What a program printed, and how it exited (`None`: killed by a signal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

#[derive(Debug, Clone)]
pub struct Runner {
    timeout: Duration,
}

impl Default for Runner {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
        }
    }
}

impl Runner {
    pub fn with_timeout(timeout: Duration) -> Self {
        Self { timeout }
    }

    /// Whether `program` can be run (found on PATH, or at its path).
    pub fn is_installed(&self, program: &str) -> bool {
        find_program(program).is_some()
    }

    /// Runs `program args...` and succeeds only on exit status 0.
    pub async fn run<S: AsRef<OsStr>>(
        &self,
        program: &str,
        args: &[S],
    ) -> Result<RunOutput, RunError> {
        successful(program, self.run_unchecked(program, args, None).await?)
    }

    /// Like [`Runner::run`], with `input` fed to the program's stdin.
    pub async fn run_with_input<S: AsRef<OsStr>>(
        &self,
        program: &str,
        args: &[S],
        input: &str,
    ) -> Result<RunOutput, RunError> {
        successful(
            program,
            self.run_unchecked(program, args, Some(input)).await?,
        )
    }

    /// Runs a program whose exit status carries information rather than
    /// plain failure (smartctl's is a bit mask); the caller judges it.
    pub async fn run_unchecked<S: AsRef<OsStr>>(
        &self,
        program: &str,
        args: &[S],
        input: Option<&str>,
    ) -> Result<RunOutput, RunError> {
        let path = find_program(program).ok_or_else(|| RunError::NotInstalled {
            program: program.to_owned(),
        })?;
        let spawn_error = |source| RunError::Spawn {
            program: program.to_owned(),
            source,
        };
        let mut child = Command::new(path)
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(spawn_error)?;
        if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
            use tokio::io::AsyncWriteExt;
            stdin
                .write_all(input.as_bytes())
                .await
                .map_err(spawn_error)?;
        }
        let output = tokio::time::timeout(self.timeout, child.wait_with_output())
            .await
            .map_err(|_| RunError::Timeout {
                program: program.to_owned(),
                timeout: self.timeout,
            })?
            .map_err(spawn_error)?;
        Ok(RunOutput {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

fn successful(program: &str, output: RunOutput) -> Result<RunOutput, RunError> {
    if output.code == Some(0) {
        Ok(output)
    } else {
        Err(RunError::Failed {
            program: program.to_owned(),
            status: output.code.map_or_else(
                || "killed by a signal".to_owned(),
                |c| format!("exit status {c}"),
            ),
            stderr: output.stderr,
        })
    }
}

/// Looks the program up before spawning it, so that a missing tool is
/// reported as such (and the same way under qemu-user, where a failed exec
/// looks like exit status 127).
fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &Path| {
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = PathBuf::from(program);
        return executable(&path).then_some(path);
    }
    let dirs = std::env::var_os("PATH")?;
    std::env::split_paths(&dirs)
        .map(|dir| dir.join(program))
        .find(|path| executable(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn captures_stdout_of_a_successful_program() {
        let out = Runner::default().run("echo", &["a b", "c"]).await.unwrap();
        // One argument stays one argument: no shell splits it.
        assert_eq!(out.stdout, "a b c\n");
    }

    #[tokio::test]
    async fn failure_carries_stderr_and_status() {
        let err = Runner::default()
            .run("ls", &["/nonexistent/nasd-test"])
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("ls failed"), "{text}");
        assert!(text.contains("nasd-test"), "{text}");
    }

    #[tokio::test]
    async fn input_reaches_stdin_and_unchecked_keeps_the_status() {
        let out = Runner::default()
            .run_with_input("cat", &[] as &[&str], "label: gpt\n")
            .await
            .unwrap();
        assert_eq!(out.stdout, "label: gpt\n");
        // ls lists what exists and exits 2 for what does not.
        let out = Runner::default()
            .run_unchecked("ls", &["-d", "/nonexistent/nasd", "/"], None)
            .await
            .unwrap();
        assert_eq!((out.code, out.stdout.as_str()), (Some(2), "/\n"));
    }

    #[tokio::test]
    async fn a_hung_program_is_killed_at_the_timeout() {
        let started = std::time::Instant::now();
        let err = Runner::with_timeout(Duration::from_millis(200))
            .run("sleep", &["30"])
            .await
            .unwrap_err();
        assert!(matches!(err, RunError::Timeout { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn a_missing_program_is_reported_as_not_installed() {
        for program in ["nasd-no-such-program", "/nonexistent/bin/tool"] {
            let err = Runner::default()
                .run(program, &[] as &[&str])
                .await
                .unwrap_err();
            assert!(matches!(err, RunError::NotInstalled { .. }), "{err}");
            assert!(err.to_string().contains("is not installed"), "{err}");
        }
    }
}
