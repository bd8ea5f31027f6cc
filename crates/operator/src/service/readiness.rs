//! Readiness checks that mean "serves requests", for every long-running
//! workload. They run inside the service's container (its image is the
//! service's own, so the check is a Python script, `readiness.py`, shipped in
//! the ConfigMap beside the configuration).

use super::model::Readiness;

/// The script's key in the ConfigMap (not `*.conf`: `--config-dir` skips it).
pub const SCRIPT_FILE: &str = "ratchet-readiness.py";
const SCRIPT: &str = include_str!("readiness.py");

/// The ConfigMap entry holding the checks.
pub fn script() -> (&'static str, String) {
    (SCRIPT_FILE, SCRIPT.to_string())
}

/// How long a check keeps looking before it says "not ready": its period
/// less 2 s for the interpreter's start and the last look (the kubelet's
/// timeout is the period). A starting process is then Ready as soon as it
/// proves it, not a probe period later (issue 42); what a check asks is
/// unchanged.
fn patience(period_seconds: i32) -> i32 {
    (period_seconds - 2).max(0)
}

/// The check `args` of the script, run every `period_seconds`.
fn check(
    config_dir: &str,
    period_seconds: i32,
    args: impl IntoIterator<Item = String>,
) -> Readiness {
    let mut command = vec![
        "python3".to_string(),
        format!("{config_dir}/{SCRIPT_FILE}"),
        "--patience".to_string(),
        patience(period_seconds).to_string(),
    ];
    command.extend(args);
    Readiness {
        command,
        period_seconds,
    }
}

/// The API answers `path` on `port` without a server error (401 counts: its
/// authentication is up).
pub fn api(config_dir: &str, port: i32, path: &str) -> Readiness {
    check(
        config_dir,
        5,
        ["http".to_string(), port.to_string(), path.to_string()],
    )
}

/// The API answers a POST of `body` (JSON) to `path` on `port` without a
/// server error: for a check that must reach the service's database (e.g.
/// authenticating a user that does not exist: 401 when the lookup worked).
pub fn api_post(config_dir: &str, port: i32, path: &str, body: &str) -> Readiness {
    check(
        config_dir,
        5,
        [
            "http".to_string(),
            port.to_string(),
            path.to_string(),
            body.to_string(),
        ],
    )
}

/// A filter value standing for the container's host name (the pod's name).
pub const OWN_HOSTNAME: &str = "@hostname";

/// A filter value standing for the container's environment variable `name`
/// (e.g. the node's name a per-node agent reports under).
pub fn from_env(name: &str) -> String {
    format!("@env:{name}")
}

/// A heartbeat row of `table` matching `filters` was written since the
/// container started and within `max_age_seconds`.
pub fn heartbeat(
    config_dir: &str,
    table: &str,
    max_age_seconds: u32,
    filters: &[(&str, &str)],
) -> Readiness {
    row_check(
        config_dir,
        "heartbeat",
        table,
        max_age_seconds,
        &[],
        filters,
    )
}

/// As [`heartbeat`], and the row's `counter` column grew since the
/// container's first check, remembered in `state_file` (on a volume that
/// lives as long as the pod): for a service that writes its row as it starts,
/// before it works (Cinder: a volume service whose driver cannot initialise
/// registers, then sends no heartbeat).
pub fn heartbeats(
    config_dir: &str,
    table: &str,
    max_age_seconds: u32,
    counter: &str,
    state_file: &str,
    filters: &[(&str, &str)],
) -> Readiness {
    let counted = [counter, state_file];
    row_check(
        config_dir,
        "heartbeats",
        table,
        max_age_seconds,
        &counted,
        filters,
    )
}

/// As [`heartbeat`], for a `table` whose rows carry their report time in a
/// column of their own, `stamp` (Neutron's agents: `heartbeat_timestamp`).
pub fn reported(
    config_dir: &str,
    table: &str,
    stamp: &str,
    max_age_seconds: u32,
    filters: &[(&str, &str)],
) -> Readiness {
    row_check(
        config_dir,
        "reported",
        table,
        max_age_seconds,
        &[stamp],
        filters,
    )
}

/// The database answers a query: for a process whose work is the database's
/// and that writes no row of its own to show it lives (periodic tasks).
pub fn database(config_dir: &str) -> Readiness {
    check(config_dir, 10, ["database".to_string()])
}

fn row_check(
    config_dir: &str,
    kind: &str,
    table: &str,
    max_age_seconds: u32,
    options: &[&str],
    filters: &[(&str, &str)],
) -> Readiness {
    let max_age = max_age_seconds.to_string();
    let args = [kind, table, &max_age]
        .into_iter()
        .chain(options.iter().copied())
        .map(str::to_string)
        .chain(
            filters
                .iter()
                .map(|(column, value)| format!("{column}={value}")),
        );
    check(config_dir, 10, args)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::process::Command;

    use super::*;

    /// Runs the script's HTTP check (a POST of `body` when given) against a
    /// one-shot local server answering `status` (or against a closed port):
    /// exit status, stderr, and the request line the server read.
    fn http_check(status: Option<u16>, body: Option<&str>) -> (bool, String, String) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let server = status.map(|status| {
            std::thread::spawn(move || {
                let Ok((mut stream, _)) = listener.accept() else {
                    return String::new();
                };
                let mut request = [0u8; 1024];
                let read = stream.read(&mut request).unwrap_or(0);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} Status\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                let request = String::from_utf8_lossy(&request[..read]).into_owned();
                request.lines().next().unwrap_or_default().to_string()
            })
        });
        let dir = std::env::temp_dir().join(format!("ratchet-readiness-{port}"));
        std::fs::create_dir_all(&dir).expect("dir");
        let script = dir.join(SCRIPT_FILE);
        std::fs::write(&script, SCRIPT).expect("script");
        // Debian's Python, as scripts/test installs it: the script needs nothing else here.
        let output = Command::new("/usr/bin/python3.11")
            .arg(&script)
            .args(["http", &port.to_string(), "/v3/"])
            .args(body)
            .output()
            .expect("python3.11 runs");
        let request_line = server
            .map(|server| server.join().unwrap_or_default())
            .unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
            request_line,
        )
    }

    #[test]
    fn the_api_check_passes_an_answer_without_a_server_error_only() {
        let get = "GET /v3/ HTTP/1.1".to_string();
        assert_eq!(
            http_check(Some(200), None),
            (true, String::new(), get.clone())
        );
        // An API whose pipeline authenticates is serving.
        assert_eq!(http_check(Some(401), None), (true, String::new(), get));
        let (ready, why, _) = http_check(Some(500), None);
        assert!(!ready && why.contains("GET /v3/ answered 500"), "{why}");
        let (ready, why, _) = http_check(None, None);
        assert!(!ready && why.starts_with("not ready: GET /v3/:"), "{why}");
    }

    #[test]
    fn with_a_body_the_api_check_posts_it() {
        let post = "POST /v3/ HTTP/1.1".to_string();
        assert_eq!(
            http_check(Some(401), Some("{}")),
            (true, String::new(), post)
        );
        let (ready, why, _) = http_check(Some(500), Some("{}"));
        assert!(!ready && why.contains("POST /v3/ answered 500"), "{why}");
    }

    /// A SQLite `services` table (host, timestamps, report count) and the
    /// script beside it, in a directory of their own.
    struct HeartbeatDb {
        dir: std::path::PathBuf,
    }

    impl HeartbeatDb {
        /// The table holding `rows`: (host, seconds since the heartbeat, report count).
        fn with(rows: &[(&str, u32, u32)]) -> HeartbeatDb {
            static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = std::env::temp_dir()
                .join(format!("ratchet-heartbeat-{}-{run}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("dir");
            std::fs::write(dir.join(SCRIPT_FILE), SCRIPT).expect("script");
            let db = HeartbeatDb { dir };
            db.exec("CREATE TABLE services (host TEXT, updated_at DATETIME, created_at DATETIME, report_count INTEGER);");
            for (host, age, count) in rows {
                db.exec(&format!(
                    "INSERT INTO services VALUES ('{host}', datetime('now', '-{age} seconds'), NULL, {count});"
                ));
            }
            db
        }

        fn exec(&self, sql: &str) {
            let done = Command::new("/usr/bin/python3.11")
                .args([
                    "-c",
                    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()",
                ])
                .arg(self.dir.join("cinder.db"))
                .arg(sql)
                .status()
                .expect("python3.11 runs");
            assert!(done.success());
        }

        /// Runs the script with the Cinder image's Python (it carries
        /// SQLAlchemy) and `args` after the check's name, filtered on this
        /// host's name; in a fresh PID namespace when `fresh_container`, so
        /// the check's container starts now. `url` replaces the database's.
        /// Exit status and stderr.
        fn check(&self, args: &[&str], url: Option<&str>, fresh_container: bool) -> (bool, String) {
            self.run(args, url, fresh_container, &[], true)
        }

        /// Runs the script with `args` as given and `env` set, against this
        /// database.
        fn check_with(&self, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
            self.run(args, None, false, env, false)
        }

        fn run(
            &self,
            args: &[&str],
            url: Option<&str>,
            fresh_container: bool,
            env: &[(&str, &str)],
            this_host: bool,
        ) -> (bool, String) {
            let catalogue =
                ratchet_testenv::process_kubelet::images::Catalogue::load().expect("the catalogue");
            let image = catalogue
                .resolve("ratchet.test/cinder:2026.2")
                .unwrap_or_else(|e| panic!("the Cinder image builds: {}", e.0));
            let python = image.venv.expect("a venv image").join("bin/python3");
            let mut command = if fresh_container {
                let mut c = Command::new("/usr/bin/unshare");
                c.args(["--pid", "--fork", "--mount-proc"]).arg(&python);
                c
            } else {
                Command::new(&python)
            };
            command
                .arg(self.dir.join(SCRIPT_FILE))
                .args(args)
                .args(this_host.then_some("host=@hostname"))
                .envs(env.iter().copied())
                .env_remove("OS_DATABASE__CONNECTION");
            let own = format!("sqlite:///{}", self.dir.join("cinder.db").display());
            let url = url.unwrap_or(&own);
            if !url.is_empty() {
                command.env("OS_DATABASE__CONNECTION", url);
            }
            let output = command.output().expect("the check runs");
            (
                output.status.success(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        }
    }

    impl Drop for HeartbeatDb {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// The `heartbeat` check over a table holding `rows` (host, age).
    fn heartbeat_check(
        url: Option<&str>,
        rows: &[(&str, u32)],
        fresh_container: bool,
    ) -> (bool, String) {
        let rows: Vec<(&str, u32, u32)> = rows.iter().map(|(h, age)| (*h, *age, 0)).collect();
        HeartbeatDb::with(&rows).check(&["heartbeat", "services", "60"], url, fresh_container)
    }

    fn this_host() -> String {
        let this = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
        this.trim().to_string()
    }

    #[test]
    fn the_counted_heartbeat_check_waits_for_a_report_after_the_first_look() {
        let this = this_host();
        let db = HeartbeatDb::with(&[(&this, 5, 7)]);
        let state = db.dir.join("state");
        let state = state.to_str().expect("a UTF-8 path");
        let args = ["heartbeats", "services", "60", "report_count", state];
        // Written since the start, but maybe only registered: not yet.
        let (ready, why) = db.check(&args, None, false);
        assert!(
            !ready && why.contains("report_count is 7 at the first look"),
            "{why}"
        );
        let (ready, why) = db.check(&args, None, false);
        assert!(
            !ready && why.contains("no heartbeat since start-up (report_count still 7)"),
            "{why}"
        );
        db.exec("UPDATE services SET report_count = 8, updated_at = datetime('now');");
        assert_eq!(db.check(&args, None, false), (true, String::new()));
        // A restarted container looks afresh: its predecessor's count does not carry.
        std::fs::write(state, "2000-01-01T00:00:00 0\n").expect("state");
        let (ready, why) = db.check(&args, None, false);
        assert!(
            !ready && why.contains("report_count is 8 at the first look"),
            "{why}"
        );
    }

    #[test]
    fn with_patience_a_check_is_ready_at_the_first_heartbeat_and_otherwise_says_why_in_time() {
        use std::time::{Duration, Instant};
        let this = this_host();
        let db = HeartbeatDb::with(&[(&this, 5, 7)]);
        let state = db.dir.join("state");
        let args = [
            "--patience",
            "8",
            "heartbeats",
            "services",
            "60",
            "report_count",
            state.to_str().expect("a UTF-8 path"),
        ];
        let started = Instant::now();
        let verdict = std::thread::scope(|scope| {
            scope.spawn(|| {
                // The report comes a second after the check's first look.
                while !state.exists() && started.elapsed() < Duration::from_secs(30) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                std::thread::sleep(Duration::from_secs(1));
                db.exec("UPDATE services SET report_count = 8, updated_at = datetime('now');");
            });
            db.check(&args, None, false)
        });
        assert_eq!(verdict, (true, String::new()), "one probe sees the report");
        assert!(started.elapsed() < Duration::from_secs(8));

        let started = Instant::now();
        let args = ["--patience", "1", "heartbeat", "services", "60"];
        let (ready, why) = HeartbeatDb::with(&[]).check(&args, None, false);
        assert!(!ready && why.contains("no services row"), "{why}");
        assert!(
            started.elapsed() >= Duration::from_millis(500),
            "it looked again before saying so"
        );
        let (ready, why) = db.check_with(&["--patience", "x", "database"], &[]);
        assert!(!ready && why.contains("--patience takes seconds"), "{why}");
    }

    #[test]
    fn the_heartbeat_check_passes_a_fresh_row_of_this_host_written_since_the_start_only() {
        let this = this_host();
        let this = this.as_str();
        assert_eq!(
            heartbeat_check(None, &[(this, 5), ("other", 0)], false),
            (true, String::new())
        );
        let (ready, why) = heartbeat_check(None, &[(this, 120)], false);
        assert!(!ready && why.contains("is older than 60s"), "{why}");
        let (ready, why) = heartbeat_check(None, &[("other", 0)], false);
        assert!(!ready && why.contains("no services row"), "{why}");
        // A worker that restarted and has not reported since: its last heartbeat
        // is its previous run's.
        let (ready, why) = heartbeat_check(None, &[(this, 5)], true);
        assert!(!ready && why.contains("older than this container"), "{why}");
        let (ready, why) = heartbeat_check(Some("sqlite:////nonexistent/cinder.db"), &[], false);
        assert!(
            !ready && why.starts_with("not ready: reading services: OperationalError"),
            "{why}"
        );
        let (ready, why) = heartbeat_check(Some(""), &[], false);
        assert!(
            !ready && why.contains("OS_DATABASE__CONNECTION is not set"),
            "{why}"
        );
    }

    #[test]
    fn a_row_with_its_own_report_time_is_found_by_an_environment_variable() {
        let db = HeartbeatDb::with(&[]);
        db.exec("CREATE TABLE agents (host TEXT, agent_type TEXT, heartbeat_timestamp DATETIME);");
        db.exec("INSERT INTO agents VALUES ('node-1', 'Metadata agent', datetime('now', '-5 seconds'));");
        db.exec("INSERT INTO agents VALUES ('node-2', 'Metadata agent', datetime('now', '-500 seconds'));");
        let check = |node: &str| {
            let args = [
                "reported",
                "agents",
                "60",
                "heartbeat_timestamp",
                "agent_type=Metadata agent",
                "host=@env:RATCHET_TEST_NODE",
            ];
            db.check_with(&args, &[("RATCHET_TEST_NODE", node)])
        };
        assert_eq!(check("node-1"), (true, String::new()));
        let (ready, why) = check("node-2");
        assert!(!ready && why.contains("is older than 60s"), "{why}");
        let (ready, why) = check("");
        assert!(
            !ready && why.contains("RATCHET_TEST_NODE is not set"),
            "{why}"
        );
    }

    #[test]
    fn the_database_check_asks_the_database() {
        let db = HeartbeatDb::with(&[]);
        assert_eq!(db.check_with(&["database"], &[]), (true, String::new()));
        let unreachable = Some("mysql+pymysql://x@127.0.0.1:1/x");
        let (ready, why) = db.run(&["database"], unreachable, false, &[], false);
        assert!(
            !ready && why.starts_with("not ready: the database: "),
            "{why}"
        );
    }

    #[test]
    fn commands_name_the_script_in_the_config_directory() {
        assert_eq!(
            api("/etc/cinder", 8776, "/v3/").command,
            [
                "python3",
                "/etc/cinder/ratchet-readiness.py",
                "--patience",
                "3",
                "http",
                "8776",
                "/v3/"
            ]
        );
        assert_eq!(
            heartbeat(
                "/etc/cinder",
                "services",
                60,
                &[("binary", "cinder-scheduler")]
            )
            .command,
            [
                "python3",
                "/etc/cinder/ratchet-readiness.py",
                "--patience",
                "8",
                "heartbeat",
                "services",
                "60",
                "binary=cinder-scheduler"
            ]
        );
    }
}
