//! The binary's edge: command line, logging, wiring, signals. Errors become
//! `anyhow` here and nowhere else.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};

use nasd::api::{self, AppState};
use nasd::auth::Auth;
use nasd::config::{self, Config};
use nasd::host::{self, Host};
use nasd::inventory;
use nasd::store::Store;

#[derive(Parser)]
#[command(
    name = "nasd",
    version,
    about = "NAS service for ODROID-HC4 and ODROID-XU4 boards"
)]
struct Cli {
    /// Read /sys, /proc, /dev and /etc under this directory instead of /
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Configuration file [default: /etc/nasd/nasd.toml, if present]
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon: web UI, API and background work
    Serve {
        /// Address and port to listen on, e.g. 127.0.0.1:8080
        #[arg(long, value_name = "ADDR:PORT")]
        listen: Option<String>,
        /// Where the database and the setup token live
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Show board, CPU clusters, temperatures, memory and network
    Status {
        /// Print JSON (the same document as GET /api/v1/system)
        #[arg(long)]
        json: bool,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_logging();
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("nasd: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let explicit = cli.config.is_some();
    let config_path = cli
        .config
        .unwrap_or_else(|| PathBuf::from(host::DEFAULT_CONFIG_PATH));
    let mut config = Config::load(&config_path, explicit)?;
    if let Some(root) = cli.root {
        config.root = root;
    }
    let host = Host::new(&config.root)?;
    match cli.command {
        Command::Status { json } => {
            let info = inventory::collect(&host)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&info)?);
            } else {
                print!("{}", inventory::render_text(&info));
            }
            Ok(())
        }
        Command::Serve { listen, data_dir } => {
            if let Some(listen) = listen {
                config.listen = config::parse_listen("--listen", &listen)?;
            }
            if let Some(dir) = data_dir {
                config.data_dir = dir;
            }
            tokio::runtime::Builder::new_multi_thread()
                // Two workers are plenty for an admin UI and keep memory low
                // on a 2 GB board; blocking work has its own pool.
                .worker_threads(2)
                .enable_all()
                .build()?
                .block_on(serve(config, host))
        }
    }
}

async fn serve(config: Config, host: Host) -> anyhow::Result<()> {
    let store = Arc::new(Store::open(&config.data_dir)?);
    let auth = Arc::new(Auth::new(store, &config.data_dir));
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!(
        "nasd {} listening on http://{addr}/",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(token) = auth.ensure_setup_token()? {
        tracing::warn!(
            "no administrator yet: open http://{addr}/ and enter setup token {token} (also in {})",
            auth.token_path().display()
        );
    }
    // Tell systemd (Type=notify) we are ready; a no-op outside systemd.
    if let Err(err) = sd_notify::notify(&[sd_notify::NotifyState::Ready]) {
        tracing::warn!("sd_notify: {err}");
    }
    api::serve(listener, AppState { auth, host }, shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; stop with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    tracing::info!("shutting down");
}

/// To the journal when systemd runs us (it sets JOURNAL_STREAM), else to
/// stderr. NASD_LOG sets the level (error, warn, info, debug, trace).
fn init_logging() {
    use std::io::IsTerminal;
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::prelude::*;
    let level = std::env::var("NASD_LOG")
        .ok()
        .and_then(|l| l.parse::<LevelFilter>().ok())
        .unwrap_or(LevelFilter::INFO);
    let journald = std::env::var_os("JOURNAL_STREAM").and_then(|_| tracing_journald::layer().ok());
    let registry = tracing_subscriber::registry().with(level);
    match journald {
        Some(layer) => registry.with(layer).init(),
        None => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(std::io::stderr().is_terminal()),
            )
            .init(),
    }
}
