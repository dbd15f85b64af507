//! The binary's edge: command line, logging, wiring, signals. Errors become
//! `anyhow` here and nowhere else.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};

use jiff::Timestamp;
use nasd::api::{self, AppState};
use nasd::auth::Auth;
use nasd::bench::disk::{DiskBench, DiskRequest, DiskRun, Status};
use nasd::bench::net::{ClientOptions, NetBench, NetRun};
use nasd::config::{self, Config};
use nasd::disks::power::PowerSettings;
use nasd::disks::{Disks, FormatRequest, MountRequest, hotplug, text};
use nasd::host::runner::Runner;
use nasd::host::{self, Host};
use nasd::inventory;
use nasd::monitor::Monitor;
use nasd::schedule::model::{JobRun, ScheduleRequest};
use nasd::schedule::notify::Notifier;
use nasd::schedule::{Deps, Limits, Scheduler};
use nasd::shares::{self, ShareRequest, Shares};
use nasd::store::Store;
use nasd::tuning::{self, Tuner, TuningRequest};
use nasd::validate::Invalid;

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
    /// Read and write fstab and other /etc files here instead of <root>/etc
    #[arg(long, global = true, value_name = "DIR")]
    etc_dir: Option<PathBuf>,
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
        /// Port of the built-in iperf3 server; 0 turns it off
        #[arg(long, value_name = "N")]
        iperf3_port: Option<u16>,
        /// Seconds between monitoring samples (1-3600)
        #[arg(long, value_name = "SECONDS")]
        sample_interval: Option<u64>,
        /// Seconds between writes of the sample batch (0: every sample)
        #[arg(long, value_name = "SECONDS")]
        commit_interval: Option<u64>,
    },
    /// Show board, CPU clusters, temperatures, memory and network
    Status {
        /// Print JSON (the same document as GET /api/v1/system)
        #[arg(long)]
        json: bool,
    },
    /// Disks: list, SMART, format, mount, unmount, spindown
    Disks {
        #[command(subcommand)]
        verb: DisksVerb,
    },
    /// CPU frequency, I/O queue and interrupt tuning, kept applied
    Tune {
        #[command(subcommand)]
        verb: TuneVerb,
    },
    /// Shared folders over Samba and NFS
    Shares {
        #[command(subcommand)]
        verb: SharesVerb,
    },
    /// Samba users (backed by no-login system users)
    Users {
        #[command(subcommand)]
        verb: UsersVerb,
    },
    /// Benchmarks
    Bench {
        #[command(subcommand)]
        verb: BenchVerb,
    },
    /// Scheduled self-tests
    Schedule {
        #[command(subcommand)]
        verb: ScheduleVerb,
    },
    /// The history of scheduled jobs, newest first
    Jobs {
        #[arg(long, default_value_t = 50)]
        limit: u32,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum ScheduleVerb {
    /// Schedules with their next three runs
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a schedule
    Add {
        #[arg(long)]
        name: String,
        /// Five fields (minute hour day-of-month month day-of-week) or
        /// @hourly, @daily, @weekly, @monthly, in the local time zone
        #[arg(long)]
        cron: String,
        /// The job as JSON: {"kind":"health_check"},
        /// {"kind":"disk_benchmark","disk":"all","preset":"quick"},
        /// {"kind":"smart_test","disk":"sda","test":"short"},
        /// {"kind":"net_benchmark","peer":"nas2","time":10}, {"kind":"maintenance"}
        #[arg(long)]
        job: String,
        /// After downtime, run once at start if a run was missed
        #[arg(long)]
        catch_up: bool,
        /// wait (up to 30 min) or skip while the board is hot or busy
        #[arg(long, default_value = "wait")]
        when_busy: String,
        /// skip or wake a spun-down disk (default: wake for SMART tests)
        #[arg(long)]
        when_asleep: Option<String>,
        #[arg(long, value_name = "SECS")]
        timeout: Option<u64>,
        #[arg(long)]
        disabled: bool,
    },
    /// Remove a schedule (its history stays)
    Remove { id: i64 },
    /// Run a schedule now, here, and wait for it
    Run {
        id: i64,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum BenchVerb {
    /// Network throughput against an iperf3 server (or another nasd)
    Net {
        /// HOST or HOST:PORT (port 5201 by default)
        #[arg(long)]
        peer: String,
        /// The server sends (iperf3 -R)
        #[arg(long)]
        reverse: bool,
        /// Both send at once (iperf3 --bidir)
        #[arg(long)]
        bidir: bool,
        /// Parallel streams
        #[arg(long, default_value_t = 1)]
        parallel: u32,
        /// Seconds
        #[arg(long, default_value_t = 10)]
        time: u32,
        #[arg(long)]
        json: bool,
    },
    /// Network tests served and run, newest first
    NetRuns {
        #[arg(long)]
        json: bool,
    },
    /// Disk throughput and latency from a preset or a fio job file; the run
    /// is recorded with its context and compared with the disk's baseline.
    /// Ctrl-C cancels it (its test files are removed).
    Disk {
        /// kubestr (four fio profiles, about 8 min), dbench (9 tests, about
        /// 3 min, with dbench's summary), sbc (the SBC storage score, about
        /// a minute) or quick (about 30 s)
        #[arg(
            long,
            value_name = "NAME",
            required_unless_present = "fio",
            conflicts_with = "fio"
        )]
        preset: Option<String>,
        /// The fio job file (the subset nasd knows; others are refused by name)
        #[arg(long, value_name = "JOBFILE")]
        fio: Option<PathBuf>,
        /// A directory on the filesystem to test, or a blank block device
        #[arg(long, value_name = "DIR|DEVICE")]
        target: PathBuf,
        /// For a block device: its path again, to confirm it may be overwritten
        #[arg(long, value_name = "DEVICE")]
        confirm_device: Option<String>,
        /// The whole run as JSON (results, context, baseline)
        #[arg(long)]
        json: bool,
        /// Print fio's JSON shape (--output-format=json) for the fields nasd measures
        #[arg(long, conflicts_with = "json")]
        fio_json: bool,
    },
    /// Disk benchmark runs, newest first
    Runs {
        #[arg(long)]
        json: bool,
    },
    /// One disk benchmark run in full
    Show {
        id: i64,
        #[arg(long)]
        json: bool,
    },
    /// Two disk benchmark runs side by side, with B / A ratios
    Compare {
        a: i64,
        b: i64,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum SharesVerb {
    /// Shares and the state of the Samba and NFS services
    List {
        #[arg(long)]
        json: bool,
    },
    /// Share a folder on a data disk
    Add {
        name: String,
        #[arg(long)]
        path: String,
        #[arg(long, default_value = "")]
        comment: String,
        #[arg(long)]
        read_only: bool,
        /// Open without a password
        #[arg(long)]
        guest: bool,
        /// Samba users allowed in, comma-separated (default: all)
        #[arg(long, value_delimiter = ',')]
        users: Vec<String>,
        /// Offer it to Macs as a Time Machine destination
        #[arg(long)]
        time_machine: bool,
        /// Also export over NFS to these hosts or networks, comma-separated
        #[arg(long, value_delimiter = ',')]
        nfs_clients: Vec<String>,
        /// Allow a folder on the system's own filesystem
        #[arg(long)]
        force: bool,
    },
    /// Stop sharing a folder (the folder and its files stay)
    Remove { name: String },
}

#[derive(Subcommand)]
enum UsersVerb {
    List,
    /// Add a user; the password is asked for (or read from standard input)
    Add {
        name: String,
    },
    /// Change a user's password (asked for, or read from standard input)
    Passwd {
        name: String,
    },
    Disable {
        name: String,
    },
    Enable {
        name: String,
    },
    Remove {
        name: String,
    },
}

#[derive(Subcommand)]
enum TuneVerb {
    /// Governors, tunables, frequencies, queues, interrupts, temperatures
    Show {
        #[arg(long)]
        json: bool,
    },
    /// Apply a preset (io-tuned, armbian, performance, powersave, schedutil)
    Apply {
        preset: String,
        /// Only this cpufreq policy (e.g. policy4)
        #[arg(long)]
        cluster: Option<String>,
        /// Apply even when a zone is near its throttling point
        #[arg(long)]
        accept_thermal_risk: bool,
    },
    /// Set values: a policy's governor, min_khz, max_khz or tunables, or a
    /// disk's read_ahead_kb and scheduler
    Set {
        /// A cpufreq policy (policy0) or a disk (sda)
        target: String,
        /// KEY=VALUE pairs
        #[arg(required = true)]
        values: Vec<String>,
        #[arg(long)]
        accept_thermal_risk: bool,
    },
    /// Print the kept tuning as /etc/sysfs.d lines (for sysfsutils)
    ExportSysfs,
    /// What the tuning did on its own (drift put back)
    Events,
}

#[derive(Subcommand)]
enum DisksVerb {
    /// Disks, partitions, filesystems and mounts
    List {
        /// Print JSON (the same document as GET /api/v1/disks)
        #[arg(long)]
        json: bool,
    },
    /// SMART health (a sleeping disk is not woken)
    Smart {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Erase a disk or partition and make a filesystem on it
    Format {
        name: String,
        /// ext4, xfs, btrfs, ntfs, exfat or vfat
        #[arg(long)]
        fs: String,
        #[arg(long)]
        label: String,
        /// The disk's serial (a loop device's backing file): required when
        /// it carries data
        #[arg(long)]
        confirm: Option<String>,
    },
    /// Mount with nasd's options and add it to fstab
    Mount {
        name: String,
        /// Extra mount options, comma-separated (checked against an allow-list)
        #[arg(long, value_delimiter = ',')]
        options: Vec<String>,
        /// Only show the options and their reasons
        #[arg(long)]
        preview: bool,
    },
    /// Unmount and remove from fstab
    Unmount {
        name: String,
        /// Unmount even while processes use it (lazy unmount)
        #[arg(long)]
        force: bool,
    },
    /// Spindown time and APM level of a hard disk, kept across reboots
    Power {
        name: String,
        /// 0 (never), 1-20, or 30-330 in steps of 30
        #[arg(long)]
        spindown_minutes: Option<u32>,
        /// 1-255 (255: off)
        #[arg(long)]
        apm: Option<u8>,
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
    if let Some(etc) = cli.etc_dir {
        config.etc_dir = Some(etc);
    }
    let mut host = Host::new(&config.root)?;
    if let Some(etc) = &config.etc_dir {
        host = host.with_etc_dir(etc);
    }
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
        Command::Serve {
            listen,
            data_dir,
            iperf3_port,
            sample_interval,
            commit_interval,
        } => {
            if let Some(secs) = sample_interval {
                config.sample_interval =
                    config::seconds("--sample-interval", secs, &config::SAMPLE_RANGE_SECS)?;
            }
            if let Some(secs) = commit_interval {
                config.commit_interval =
                    config::seconds("--commit-interval", secs, &config::COMMIT_RANGE_SECS)?;
            }
            if let Some(port) = iperf3_port {
                config.iperf3_port = port;
            }
            if let Some(listen) = listen {
                config.listen = config::parse_listen("--listen", &listen)?;
            }
            if let Some(dir) = data_dir {
                config.data_dir = dir;
            }
            runtime()?.block_on(serve(config, host))
        }
        Command::Disks { verb } => runtime()?.block_on(disks_verb(config, host, verb)),
        Command::Tune { verb } => runtime()?.block_on(tune_verb(config, host, verb)),
        Command::Shares { verb } => runtime()?.block_on(shares_verb(config, host, verb)),
        Command::Users { verb } => runtime()?.block_on(users_verb(config, host, verb)),
        Command::Bench { verb } => runtime()?.block_on(bench_verb(config, verb)),
        Command::Schedule { verb } => runtime()?.block_on(schedule_verb(config, host, verb)),
        Command::Jobs { limit, json } => {
            let jobs = open_scheduler(&config, &host)?.jobs(limit)?;
            if json {
                print_json(&jobs)?;
            } else {
                jobs.iter().for_each(|j| print!("{}", job_line(j)));
            }
            Ok(())
        }
    }
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        // Two workers are plenty for an admin UI and keep memory low on a
        // 2 GB board; blocking work has its own pool.
        .worker_threads(2)
        .enable_all()
        .build()
}

fn open_disks(config: &Config, host: &Host) -> anyhow::Result<(Arc<Store>, Arc<Disks>)> {
    let store = Arc::new(Store::open(&config.data_dir)?);
    let disks = Arc::new(Disks::new(
        host.clone(),
        Runner::default(),
        store.clone(),
        config.mount_base.clone(),
    ));
    Ok((store, disks))
}

fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

fn print_net_run(run: &NetRun) {
    let flow = |name: &str, f: &Option<nasd::bench::net::Flow>| {
        if let Some(f) = f {
            let retransmits = f
                .retransmits
                .map_or_else(String::new, |r| format!(", {r} retransmits"));
            println!(
                "  {name}: {:.1} Mbit/s ({} bytes{retransmits})",
                f.bits_per_second / 1e6,
                f.bytes
            );
        }
    };
    println!(
        "#{} {:?} {} {:?}, {} stream(s), {:.1} s",
        run.id, run.role, run.peer, run.mode, run.streams, run.seconds
    );
    flow("client to server", &run.client_to_server);
    flow("server to client", &run.server_to_client);
}

async fn bench_verb(config: Config, verb: BenchVerb) -> anyhow::Result<()> {
    let store = Arc::new(Store::open(&config.data_dir)?);
    let bench = NetBench::new(store);
    match verb {
        BenchVerb::Net {
            peer,
            reverse,
            bidir,
            parallel,
            time,
            json,
        } => {
            let options = ClientOptions {
                peer,
                reverse,
                bidir,
                parallel,
                time,
            };
            let run = bench.run_client(&options).await?;
            if json {
                print_json(&run)?;
            } else {
                print_net_run(&run);
            }
        }
        BenchVerb::Disk {
            preset,
            fio,
            target,
            confirm_device,
            json,
            fio_json,
        } => {
            let jobfile = match &fio {
                Some(path) => Some(
                    std::fs::read_to_string(path)
                        .with_context(|| format!("cannot read {}", path.display()))?,
                ),
                None => None,
            };
            let disk_bench = open_disk_bench(&config)?;
            let request = DiskRequest {
                preset,
                jobfile,
                target: target.to_string_lossy().into_owned(),
                confirm_device,
            };
            let run = run_disk_bench(&disk_bench, &request).await?;
            if json {
                print_json(&run)?;
            } else if fio_json {
                print_json(&nasd::bench::disk::fio_json::render(
                    &run.results,
                    env!("CARGO_PKG_VERSION"),
                ))?;
            } else {
                print!("{}", nasd::bench::disk::text::run(&run));
            }
            if run.status != Status::Done {
                anyhow::bail!(
                    "disk benchmark #{} {}: {}",
                    run.id,
                    run.status.as_str(),
                    run.error.as_deref().unwrap_or("")
                );
            }
        }
        BenchVerb::Runs { json } => {
            let runs = open_disk_bench(&config)?.list(100)?;
            if json {
                print_json(&runs)?;
            } else {
                print!("{}", nasd::bench::disk::text::runs(&runs, unix_now()));
            }
        }
        BenchVerb::Show { id, json } => {
            let run = open_disk_bench(&config)?.get(id)?;
            if json {
                print_json(&run)?;
            } else {
                print!("{}", nasd::bench::disk::text::run(&run));
            }
        }
        BenchVerb::Compare { a, b, json } => {
            let comparison = open_disk_bench(&config)?.compare(a, b)?;
            if json {
                print_json(&comparison)?;
            } else {
                print!("{}", nasd::bench::disk::text::comparison(&comparison));
            }
        }
        BenchVerb::NetRuns { json } => {
            let runs = bench.history().list(100)?;
            if json {
                print_json(&runs)?;
            } else {
                runs.iter().for_each(print_net_run);
            }
        }
    }
    Ok(())
}

fn scheduler_limits(config: &Config) -> Limits {
    Limits {
        regression_percent: config.bench_regression_percent,
        busy_load_per_cpu: config.busy_load_per_cpu,
    }
}

fn open_scheduler(config: &Config, host: &Host) -> anyhow::Result<Arc<Scheduler>> {
    let (store, disks) = open_disks(config, host)?;
    let deps = Deps {
        host: host.clone(),
        disk_bench: Arc::new(DiskBench::new(
            host.clone(),
            disks.clone(),
            store.clone(),
            config.bench_regression_percent,
        )),
        net: Arc::new(NetBench::new(store.clone())),
        tuner: Arc::new(Tuner::new(host.clone(), store.clone())),
        store,
        disks,
    };
    Ok(Arc::new(Scheduler::new(deps, scheduler_limits(config))))
}

fn job_line(j: &JobRun) -> String {
    let started = j.started_at.unwrap_or(j.queued_at);
    let duration = j
        .duration_secs
        .map_or_else(String::new, |d| format!(" {d:.0} s"));
    format!(
        "#{:<5} {} {:<11} {:<14} {}{duration}: {}\n",
        j.id,
        Timestamp::from_second(started)
            .map(|t| t
                .to_zoned(jiff::tz::TimeZone::system())
                .strftime("%Y-%m-%d %H:%M")
                .to_string())
            .unwrap_or_default(),
        j.status.as_str(),
        j.job.kind(),
        j.job.target(),
        j.message
    )
}

async fn schedule_verb(config: Config, host: Host, verb: ScheduleVerb) -> anyhow::Result<()> {
    let scheduler = open_scheduler(&config, &host)?;
    match verb {
        ScheduleVerb::List { json: true } => print_json(&scheduler.list()?)?,
        ScheduleVerb::List { json: false } => {
            for s in scheduler.list()? {
                let state = if s.schedule.enabled {
                    ""
                } else {
                    " (disabled)"
                };
                println!(
                    "#{} {}{state}: {} {} ({})",
                    s.schedule.id,
                    s.schedule.name,
                    s.schedule.cron,
                    s.schedule.job.kind(),
                    s.schedule.job.target()
                );
                for next in &s.next_runs {
                    println!("  next {next}");
                }
            }
        }
        ScheduleVerb::Add {
            name,
            cron,
            job,
            catch_up,
            when_busy,
            when_asleep,
            timeout,
            disabled,
        } => {
            let job =
                serde_json::from_str(&job).map_err(|e| Invalid::new("--job", e.to_string()))?;
            let when_busy = serde_json::from_value(serde_json::json!(when_busy))
                .map_err(|_| Invalid::new("--when-busy", "must be wait or skip"))?;
            let when_asleep = when_asleep
                .map(|w| serde_json::from_value(serde_json::json!(w)))
                .transpose()
                .map_err(|_| Invalid::new("--when-asleep", "must be skip or wake"))?;
            let request = ScheduleRequest {
                name,
                cron,
                job,
                enabled: !disabled,
                catch_up,
                when_asleep,
                when_busy,
                timeout_secs: timeout,
            };
            let view = scheduler.add(request)?;
            println!("added schedule #{}", view.schedule.id);
            for next in &view.next_runs {
                println!("  next {next}");
            }
        }
        ScheduleVerb::Remove { id } => {
            scheduler.remove(id)?;
            println!("removed schedule #{id}");
        }
        ScheduleVerb::Run { id, json } => {
            use tokio::signal::unix::{SignalKind, signal};
            let mut interrupt = signal(SignalKind::interrupt())?;
            let mut ids = Vec::new();
            for (job, mut handle) in scheduler.fire(id)? {
                // Ctrl-C cancels the run as the API's cancel does.
                tokio::select! {
                    done = &mut handle => done?,
                    _ = interrupt.recv() => {
                        eprintln!("cancelling job #{job}");
                        let _ = scheduler.cancel(job);
                        handle.await?;
                    }
                }
                ids.push(job);
            }
            // A schedule for every disk ran one job per disk.
            let mut runs = Vec::new();
            for id in ids {
                let run = scheduler.job(id)?;
                if let Some(children) = run.output["runs"].as_array() {
                    for child in children.iter().filter_map(serde_json::Value::as_i64) {
                        runs.push(scheduler.job(child)?);
                    }
                }
                runs.push(run);
            }
            if json {
                print_json(&runs)?;
            } else {
                runs.iter().for_each(|j| print!("{}", job_line(j)));
            }
        }
    }
    Ok(())
}

fn open_disk_bench(config: &Config) -> anyhow::Result<Arc<DiskBench>> {
    let host = Host::new(&config.root)?;
    let (store, disks) = open_disks(config, &host)?;
    Ok(Arc::new(DiskBench::new(
        host,
        disks,
        store,
        config.bench_regression_percent,
    )))
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Runs to the end, telling each job on stderr; Ctrl-C cancels the run
/// (its files are removed) and waits for it to stop.
async fn run_disk_bench(bench: &Arc<DiskBench>, request: &DiskRequest) -> anyhow::Result<DiskRun> {
    use tokio::signal::unix::{SignalKind, signal};
    // Installed once, before the run: no Ctrl-C falls between two waits.
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut started = bench.start(request).await?;
    let mut shown = 0;
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(250));
    loop {
        tokio::select! {
            done = &mut started.done => return Ok(done?),
            _ = interrupt.recv() => {
                eprintln!("cancelling disk benchmark #{}", started.id);
                // It may have just finished: the result follows either way.
                let _ = bench.cancel(started.id);
            }
            _ = tick.tick() => {
                if let Some(p) = bench.get(started.id)?.progress
                    && p.job_index != shown
                {
                    shown = p.job_index;
                    eprintln!("[{}/{}] {}", p.job_index, p.jobs, p.job);
                }
            }
        }
    }
}

fn open_shares(config: &Config, host: &Host) -> anyhow::Result<Shares> {
    let store = Arc::new(Store::open(&config.data_dir)?);
    Ok(Shares::new(host.clone(), Runner::default(), store))
}

fn print_applied(applied: &shares::Applied) {
    for warning in &applied.warnings {
        println!("warning: {warning}");
    }
}

async fn shares_verb(config: Config, host: Host, verb: SharesVerb) -> anyhow::Result<()> {
    let shares = open_shares(&config, &host)?;
    match verb {
        SharesVerb::List { json: true } => print_json(&shares.list().await?)?,
        SharesVerb::List { json: false } => {
            let list = shares.list().await?;
            for s in &list.shares {
                let access = if s.guest {
                    "guests".to_owned()
                } else if s.users.is_empty() {
                    "all users".to_owned()
                } else {
                    s.users.join(",")
                };
                let nfs = s
                    .nfs
                    .as_ref()
                    .map_or_else(String::new, |n| format!(", NFS to {}", n.clients.join(",")));
                println!(
                    "{}: {} ({}, {}{nfs})",
                    s.name,
                    s.path,
                    if s.read_only {
                        "read-only"
                    } else {
                        "read-write"
                    },
                    access
                );
            }
            let st = &list.status;
            println!(
                "smbd {}, NFS server {}",
                if st.smbd_running {
                    "running"
                } else {
                    "not running"
                },
                if st.nfs_available {
                    "running"
                } else {
                    "not running"
                }
            );
        }
        SharesVerb::Add {
            name,
            path,
            comment,
            read_only,
            guest,
            users,
            time_machine,
            nfs_clients,
            force,
        } => {
            let nfs = (!nfs_clients.is_empty()).then_some(shares::NfsExport {
                clients: nfs_clients,
                read_only: false,
            });
            let req = ShareRequest {
                name,
                path,
                comment,
                read_only,
                guest,
                users,
                time_machine,
                nfs,
                force,
            };
            print_applied(&shares.add(req).await?);
            println!("shared");
        }
        SharesVerb::Remove { name } => {
            print_applied(&shares.remove(&name).await?);
            println!("removed; the folder and its files are kept");
        }
    }
    Ok(())
}

/// A password from the terminal (asked twice), or the first line of
/// standard input when it is not a terminal: never from the command line,
/// where other users could read it.
fn read_password() -> anyhow::Result<String> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password("Password: ")?;
        let again = rpassword::prompt_password("Again: ")?;
        anyhow::ensure!(first == again, "the passwords differ");
        Ok(first)
    } else {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        Ok(line.trim_end_matches(['\n', '\r']).to_owned())
    }
}

async fn users_verb(config: Config, host: Host, verb: UsersVerb) -> anyhow::Result<()> {
    let shares = open_shares(&config, &host)?;
    match verb {
        UsersVerb::List => {
            for u in shares.users().await? {
                let state = if u.disabled { "disabled" } else { "enabled" };
                let origin = if u.managed {
                    "made by nasd"
                } else {
                    "made outside nasd"
                };
                println!("{} ({state}, {origin})", u.name);
            }
        }
        UsersVerb::Add { name } => shares.add_user(&name, &read_password()?).await?,
        UsersVerb::Passwd { name } => shares.set_password(&name, &read_password()?).await?,
        UsersVerb::Disable { name } => shares.set_enabled(&name, false).await?,
        UsersVerb::Enable { name } => shares.set_enabled(&name, true).await?,
        UsersVerb::Remove { name } => shares.remove_user(&name).await?,
    }
    Ok(())
}

async fn tune_verb(config: Config, host: Host, verb: TuneVerb) -> anyhow::Result<()> {
    let store = Arc::new(Store::open(&config.data_dir)?);
    let tuner = Arc::new(Tuner::new(host, store));
    let print_changes = |changes: Vec<tuning::Change>| {
        if changes.is_empty() {
            println!("nothing changed: already applied");
        }
        for c in changes {
            println!(
                "{}: {} -> {}",
                c.knob,
                c.from.as_deref().unwrap_or("?"),
                c.to
            );
        }
    };
    match verb {
        TuneVerb::Show { json: true } => print_json(&tuner.state()?)?,
        TuneVerb::Show { json: false } => print!("{}", tuning::text::render(&tuner.state()?)),
        TuneVerb::Apply {
            preset,
            cluster,
            accept_thermal_risk,
        } => {
            let req = TuningRequest {
                preset: Some(preset),
                cluster,
                accept_thermal_risk,
                ..Default::default()
            };
            print_changes(tuner.apply(req).await?);
        }
        TuneVerb::Set {
            target,
            values,
            accept_thermal_risk,
        } => {
            let mut req = tuning::request_from_pairs(&target, &values)?;
            req.accept_thermal_risk = accept_thermal_risk;
            print_changes(tuner.apply(req).await?);
        }
        TuneVerb::ExportSysfs => print!("{}", tuner.export_sysfs()?),
        TuneVerb::Events => {
            for e in tuner.events()? {
                println!("{} {}", e.at, e.message);
            }
        }
    }
    Ok(())
}

async fn disks_verb(config: Config, host: Host, verb: DisksVerb) -> anyhow::Result<()> {
    let (_store, disks) = open_disks(&config, &host)?;
    match verb {
        DisksVerb::List { json: true } => print_json(&disks.list().await?)?,
        DisksVerb::List { json: false } => print!("{}", text::render_list(&disks.list().await?)),
        DisksVerb::Smart { name, json } => {
            let report = disks.smart(&name).await?;
            if json {
                print_json(&report)?;
            } else {
                print!("{}", text::render_smart(&report));
            }
        }
        DisksVerb::Format {
            name,
            fs,
            label,
            confirm,
        } => {
            let volume = disks
                .format(&name, &FormatRequest { fs, label, confirm })
                .await?;
            print_json(&volume)?;
        }
        DisksVerb::Mount {
            name,
            options,
            preview,
        } => {
            let req = MountRequest { options };
            let outcome = if preview {
                disks.mount_preview(&name, &req).await?
            } else {
                disks.mount(&name, &req).await?
            };
            for option in &outcome.plan.options {
                println!("{:<32} {}", option.option, option.reason);
            }
            for note in &outcome.plan.notes {
                println!("note: {note}");
            }
            let verb = match (preview, outcome.changed) {
                (true, _) => "would mount at",
                (false, true) => "mounted at",
                (false, false) => "already mounted at",
            };
            println!("{verb} {}", outcome.mountpoint);
        }
        DisksVerb::Unmount { name, force } => {
            let changed = disks.unmount(&name, force).await?;
            println!("{}", if changed { "unmounted" } else { "not mounted" });
        }
        DisksVerb::Power {
            name,
            spindown_minutes,
            apm,
        } => {
            disks
                .set_power(
                    &name,
                    &PowerSettings {
                        spindown_minutes,
                        apm,
                    },
                )
                .await?;
            println!("applied and saved");
        }
    }
    Ok(())
}

async fn serve(config: Config, host: Host) -> anyhow::Result<()> {
    let (store, disks) = open_disks(&config, &host)?;
    let auth = Arc::new(Auth::new(store.clone(), &config.data_dir));
    if let Err(err) = disks.reapply_power(None).await {
        tracing::warn!("disk power settings not applied at start: {err}");
    }
    tokio::spawn(hotplug::watch(disks.clone()));
    let tuner = Arc::new(Tuner::new(host.clone(), store.clone()));
    let shares = Arc::new(Shares::new(host.clone(), Runner::default(), store.clone()));
    let monitor = Arc::new(Monitor::new(
        host.clone(),
        store.clone(),
        disks.clone(),
        config.sample_interval,
        config.commit_interval,
    ));
    let sampling = tokio::spawn(monitor.clone().run());
    let net = Arc::new(NetBench::new(store.clone()));
    if config.iperf3_port != 0
        && let Err(err) = net.set_server_port(config.iperf3_port).await
    {
        // The rest of the daemon is useful without it.
        tracing::error!("iperf3 server not started: {err}");
    }
    let disk_bench = Arc::new(DiskBench::new(
        host.clone(),
        disks.clone(),
        store.clone(),
        config.bench_regression_percent,
    ));
    match disk_bench.recover_interrupted() {
        Ok(0) => {}
        Ok(n) => tracing::warn!(
            "{n} disk benchmark(s) were interrupted by a stop; their test files are removed"
        ),
        Err(err) => tracing::error!("interrupted disk benchmarks not cleaned up: {err}"),
    }
    let scheduler = Arc::new(Scheduler::new(
        Deps {
            host: host.clone(),
            store: store.clone(),
            disks: disks.clone(),
            disk_bench: disk_bench.clone(),
            net: net.clone(),
            tuner: tuner.clone(),
        },
        scheduler_limits(&config),
    ));
    if let Err(err) = scheduler.seed_defaults() {
        tracing::error!("default schedules not added: {err}");
    }
    // Before the API serves, so no request races the history's cleanup.
    let catch_up = scheduler.start();
    tokio::spawn(scheduler.clone().run(catch_up));
    let hostname = host
        .hostname()
        .ok()
        .flatten()
        .unwrap_or_else(|| "nasd".to_owned());
    let notifier = Arc::new(Notifier::new(store.clone(), hostname, scheduler.zone()));
    tokio::spawn(notifier.clone().run());
    tokio::spawn(tuning::keep_applied(tuner.clone(), config.drift_check));
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let addr = listener.local_addr()?;
    // The token exists before the daemon says where it listens, so whoever
    // reads the address can use the token at once.
    let token = auth.ensure_setup_token()?;
    tracing::info!(
        "nasd {} listening on http://{addr}/",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(token) = token {
        tracing::warn!(
            "no administrator yet: open http://{addr}/ and enter setup token {token} (also in {})",
            auth.token_path().display()
        );
    }
    // Tell systemd (Type=notify) we are ready; a no-op outside systemd.
    if let Err(err) = sd_notify::notify(&[sd_notify::NotifyState::Ready]) {
        tracing::warn!("sd_notify: {err}");
    }
    api::serve(
        listener,
        AppState {
            auth,
            disks,
            tuner,
            shares,
            net,
            disk_bench,
            scheduler,
            notifier,
            monitor: monitor.clone(),
            host,
        },
        shutdown_signal(),
    )
    .await?;
    // The samples gathered since the last commit are kept.
    sampling.abort();
    if let Err(err) = monitor.commit() {
        tracing::error!("last monitoring batch lost: {err}");
    }
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
