//! One container of a real pod: resolving its image, planning each run (env,
//! identity, mounts), starting it in its sandbox, probing it, stopping it with
//! SIGTERM and SIGKILL, and deciding restarts with back-off.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::api::core::v1::{Container, Pod, Probe};
use kube::ResourceExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::events::{self, Kind};
use super::images::{ImageRoot, PullError};
use super::network::NetnsRuntime;
use super::pod_state::{AbortOnDrop, Context, Shared, Slot, fetch_sources, sleep_or_stop};
use super::probes::{self, Target};
use super::sandbox::{self, LaunchSpec};
use super::spec::{self, Mount, PodFacts, Waiting};
use super::status::{State, Terminated};
use super::volumes::{self, VolumeDir};

/// One container of a pod, run over and over as its restart policy says.
pub(super) struct ContainerWorker {
    pub ctx: Arc<Context>,
    pub shared: Arc<Shared>,
    pub pod: Arc<Pod>,
    pub slot: Slot,
    pub container: Container,
    pub volumes: Arc<BTreeMap<String, VolumeDir>>,
    pub facts: PodFacts,
    pub netns: PathBuf,
    pub hosts: PathBuf,
    pub resolv: PathBuf,
    pub dir: PathBuf,
}

/// How one run of the container ended.
struct Ended {
    terminated: Terminated,
    /// The pod is being deleted: no restart.
    stopping: bool,
}

/// Kills the container (and bubblewrap) on drop unless it was seen to exit,
/// and at the test process's exit while it runs.
///
/// Why the exit hook: the shared test environments live in statics, which are
/// never dropped, and the kernel's parent-death signal does not reach a
/// container whose user differs from bubblewrap's (bubblewrap's monitor holds
/// no `CAP_KILL`, and the signal is permission-checked), so without it every
/// container still running when the test binary exits would outlive it.
struct KillOnDrop {
    pids: [i32; 2],
    armed: bool,
}

/// Every armed guard's pids, for the exit hook.
static LIVE: std::sync::Mutex<std::collections::BTreeSet<[i32; 2]>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

extern "C" fn kill_live_containers() {
    let live = LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    for pid in live.iter().flatten() {
        signal(*pid, libc::SIGKILL);
    }
}

impl KillOnDrop {
    fn arm(pids: [i32; 2]) -> KillOnDrop {
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| {
            // SAFETY: registers a function without arguments that only takes a
            // lock and sends signals.
            unsafe {
                libc::atexit(kill_live_containers);
            }
        });
        LIVE.lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(pids);
        KillOnDrop { pids, armed: true }
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        LIVE.lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(&self.pids);
        if self.armed {
            for pid in self.pids {
                signal(pid, libc::SIGKILL);
            }
        }
    }
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: kill has no memory effects; the pids are our own unreaped
    // children (bubblewrap) and its child, so they cannot have been reused.
    unsafe {
        libc::kill(pid, sig);
    }
}

fn exit_code(status: std::io::Result<std::process::ExitStatus>) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(s) => s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(9)),
        Err(_) => 128 + libc::SIGKILL,
    }
}

impl ContainerWorker {
    /// The restart policy of this container: the pod's, except that an init
    /// container is never restarted after it succeeded.
    fn policy(&self) -> String {
        let policy = self
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.restart_policy.clone())
            .unwrap_or_else(|| "Always".into());
        if self.slot.init && policy == "Always" {
            "OnFailure".into()
        } else {
            policy
        }
    }

    fn grace(&self) -> u64 {
        self.pod
            .spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or(30)
            .max(0) as u64
    }

    fn event(&self, kind: Kind, reason: &str, message: String) {
        events::record(
            &self.ctx.client,
            &self.ctx.options.node_name,
            &self.pod,
            &self.container.name,
            kind,
            reason,
            message,
        );
    }

    /// Holds the container waiting; a new reason or message is recorded as a
    /// `Failed` warning once (the retries that follow repeat it silently).
    fn wait_with(&self, waiting: &Waiting) {
        let mut changed = false;
        self.shared.update(self.slot, |c| {
            changed = !matches!(&c.state, State::Waiting { reason, message }
                if *reason == waiting.reason && *message == waiting.message);
        });
        if changed && waiting.reason != "ContainerCreating" {
            self.event(
                Kind::Warning,
                "Failed",
                format!("Error: {}", waiting.message),
            );
        }
        self.shared.update(self.slot, |c| {
            c.state = State::Waiting {
                reason: waiting.reason.clone(),
                message: waiting.message.clone(),
            };
            c.ready = false;
        });
    }

    pub(super) async fn run(self, mut stop: watch::Receiver<Option<u64>>) {
        let reference = self.container.image.clone().unwrap_or_default();
        let image = {
            let catalogue = self.ctx.catalogue.clone();
            let reference = reference.clone();
            tokio::task::spawn_blocking(move || catalogue.resolve(&reference))
                .await
                .unwrap_or_else(|e| Err(PullError(format!("image resolution failed: {e}"))))
        };
        let image = match image {
            Ok(image) => image,
            Err(PullError(message)) => {
                self.wait_with(&Waiting::new("ErrImagePull", message));
                self.shared.publish().await;
                let _ = stop.wait_for(Option::is_some).await;
                self.shared.update(self.slot, |c| c.done = true);
                return;
            }
        };
        self.event(
            Kind::Normal,
            "Pulled",
            format!("Container image \"{reference}\" already present on machine"),
        );
        let mut backoff = self.ctx.options.restart_backoff;
        loop {
            let launch = match self.plan(&image).await {
                Ok(launch) => launch,
                Err(waiting) => {
                    self.wait_with(&waiting);
                    self.shared.publish().await;
                    if sleep_or_stop(&mut stop, self.ctx.options.config_retry).await {
                        self.shared.update(self.slot, |c| c.done = true);
                        return;
                    }
                    continue;
                }
            };
            let started_at = SystemTime::now();
            let began = Instant::now();
            let ended = self.run_once(launch, &mut stop, started_at).await;
            let code = ended.terminated.exit_code;
            let policy = self.policy();
            let restart = !ended.stopping
                && match policy.as_str() {
                    "Never" => false,
                    "OnFailure" => code != 0,
                    _ => true,
                };
            if !restart {
                let mut terminated = ended.terminated;
                if code != 0 && policy != "Always" {
                    // The Job controller's back-off runs from finishedAt (see module docs).
                    terminated.finished_at = SystemTime::now() - self.ctx.options.failure_backdate;
                    terminated.started_at = terminated.started_at.min(terminated.finished_at);
                }
                self.shared.update(self.slot, |c| {
                    c.state = State::Terminated(terminated);
                    c.ready = false;
                    c.done = true;
                });
                self.shared.publish().await;
                return;
            }
            if began.elapsed() > Duration::from_secs(60) {
                backoff = self.ctx.options.restart_backoff;
            }
            let name = self.container.name.clone();
            let pod_name = self.pod.name_any();
            self.shared.update(self.slot, |c| {
                c.restarts += 1;
                c.last = Some(ended.terminated);
                c.ready = false;
                c.state = State::Waiting {
                    reason: "CrashLoopBackOff".into(),
                    message: format!(
                        "back-off {}s restarting failed container={name} pod={pod_name}",
                        backoff.as_secs_f64()
                    ),
                };
            });
            self.shared.publish().await;
            self.event(
                Kind::Warning,
                "BackOff",
                format!(
                    "Back-off restarting failed container {} in pod {}",
                    self.container.name,
                    self.pod.name_any()
                ),
            );
            if sleep_or_stop(&mut stop, backoff).await {
                self.shared.update(self.slot, |c| c.done = true);
                return;
            }
            backoff = (backoff * 2).min(self.ctx.options.max_restart_backoff);
        }
    }

    /// Everything to launch one run, or why the container must wait.
    async fn plan(&self, image: &ImageRoot) -> Result<LaunchSpec, Waiting> {
        let namespace = self.pod.namespace().unwrap_or_default();
        let sources = fetch_sources(&self.ctx.client, &self.ctx.dir, &namespace, &self.pod)
            .await
            .map_err(|e| {
                Waiting::new(
                    "CreateContainerConfigError",
                    format!("reading env sources: {e}"),
                )
            })?;
        let mut env = spec::environment(&self.pod, &self.container, &self.facts, &sources)?;
        let identity = spec::identity(&self.pod, &self.container, image)?;
        let defaults = [
            ("PATH", image.path_env()),
            ("HOSTNAME", self.pod.name_any()),
            (
                "HOME",
                if identity.uid == 0 { "/root" } else { "/" }.to_string(),
            ),
        ];
        for (k, v) in defaults.into_iter().rev() {
            if !env.iter().any(|(name, _)| name == k) {
                env.insert(0, (k.to_string(), v));
            }
        }
        let argv = spec::argv(&self.container, image, &env)?;
        let mut mounts = spec::image_mounts(image);
        mounts.extend(volumes::container_mounts(&self.container, &self.volumes)?);
        let termination = self.termination_file();
        mounts.push(Mount {
            source: termination,
            dest: self
                .container
                .termination_message_path
                .clone()
                .unwrap_or_else(|| "/dev/termination-log".into()),
            read_only: false,
        });
        // Kubelet-managed files, unless a volume is mounted there.
        for (source, dest) in [
            (&self.hosts, "/etc/hosts"),
            (&self.resolv, "/etc/resolv.conf"),
        ] {
            if !mounts.iter().any(|m| m.dest == dest) {
                mounts.push(Mount {
                    source: source.clone(),
                    dest: dest.into(),
                    read_only: true,
                });
            }
        }
        Ok(LaunchSpec {
            argv,
            env,
            working_dir: self.container.working_dir.clone(),
            hostname: self.pod.name_any(),
            identity,
            mounts,
            netns: self.netns.clone(),
            log: self.log_file(),
        })
    }

    fn log_file(&self) -> PathBuf {
        self.dir.join(format!("{}.log", self.container.name))
    }

    fn termination_file(&self) -> PathBuf {
        self.dir
            .join(format!("{}.termination-log", self.container.name))
    }

    /// Runs the container once, to its exit (or its end by deletion or a failed
    /// liveness probe).
    async fn run_once(
        &self,
        launch: LaunchSpec,
        stop: &mut watch::Receiver<Option<u64>>,
        started_at: SystemTime,
    ) -> Ended {
        let start_error = |message: String| Ended {
            terminated: Terminated {
                exit_code: 128,
                reason: "StartError".into(),
                message,
                started_at,
                finished_at: SystemTime::now(),
            },
            stopping: false,
        };
        let log = self.log_file();
        let termination = self.termination_file();
        let log_offset = match self.preflight(&launch) {
            Ok(offset) => offset,
            Err(message) => return start_error(message),
        };
        let started =
            tokio::task::spawn_blocking(move || sandbox::start(&launch).map(|s| (s, launch)))
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|e| e.to_string()));
        let (started, launch) = match started {
            Ok(s) => s,
            Err(e) => return start_error(format!("failed to start container process: {e}")),
        };
        let pid = started.pid;
        let bwrap_pid = started.child.id() as i32;
        let mut guard = KillOnDrop::arm([pid, bwrap_pid]);
        let mut child = started.child;
        let mut wait = tokio::task::spawn_blocking(move || child.wait());
        let name = self.container.name.clone();
        self.event(
            Kind::Normal,
            "Created",
            format!("Created container: {name}"),
        );
        self.event(Kind::Normal, "Started", format!("Started container {name}"));
        let readiness = self.container.readiness_probe.clone();
        let startup = self.container.startup_probe.clone();
        self.shared.update(self.slot, |c| {
            c.state = State::Running { started_at };
            c.started = startup.is_none();
            c.ready = startup.is_none() && readiness.is_none();
            c.container_id = Some(format!("process://{pid}"));
        });
        self.shared.publish().await;

        let target = Target {
            pod_ip: self
                .facts
                .pod_ip
                .parse::<IpAddr>()
                .unwrap_or(IpAddr::from([127, 0, 0, 1])),
            pid,
            identity: launch.identity.clone(),
            env: launch.env.clone(),
        };
        let mut probes = AbortOnDrop::default();
        let (live_tx, mut live_rx) = tokio::sync::mpsc::channel::<()>(1);
        let mut live_tx = Some(live_tx);
        let mut startup_done = startup.is_none();
        if startup_done {
            self.start_probes(&mut probes, &target, live_tx.take());
        }
        let mut startup_result = Box::pin(startup_phase(
            startup,
            self.container.clone(),
            target.clone(),
            self.ctx.node.clone(),
        ));
        let mut stopping = false;
        let status = loop {
            tokio::select! {
                status = &mut wait => {
                    break status.unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
                }
                grace = grace_when_stopped(stop) => {
                    stopping = true;
                    self.event(Kind::Normal, "Killing", format!("Stopping container {name}"));
                    let grace = Duration::from_secs(grace);
                    // A preStop sleep hook runs first, within the grace period,
                    // while the process keeps serving.
                    let hook = pre_stop_sleep(&self.container).min(grace);
                    if !hook.is_zero()
                        && let Ok(status) = tokio::time::timeout(hook, &mut wait).await
                    {
                        break status.unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
                    }
                    break terminate(pid, bwrap_pid, &mut wait, grace.saturating_sub(hook)).await;
                }
                ok = &mut startup_result, if !startup_done => {
                    startup_done = true;
                    if !ok {
                        self.event(Kind::Warning, "Unhealthy", "Startup probe failed".into());
                        self.event(Kind::Normal, "Killing", format!("Container {name} failed startup probe, will be restarted"));
                        break terminate(pid, bwrap_pid, &mut wait, Duration::from_secs(self.grace())).await;
                    }
                    let no_readiness = readiness.is_none();
                    self.shared.update(self.slot, |c| {
                        c.started = true;
                        c.ready = no_readiness;
                    });
                    self.shared.publish().await;
                    self.start_probes(&mut probes, &target, live_tx.take());
                }
                Some(()) = live_rx.recv() => {
                    self.event(Kind::Warning, "Unhealthy", "Liveness probe failed".into());
                    self.event(Kind::Normal, "Killing", format!("Container {name} failed liveness probe, will be restarted"));
                    break terminate(pid, bwrap_pid, &mut wait, Duration::from_secs(self.grace())).await;
                }
            }
        };
        drop(probes);
        guard.armed = false;
        drop(guard);
        let finished_at = SystemTime::now();
        let code = exit_code(status);
        if code != 0
            && !stopping
            && let Some(failure) = sandbox_failure(&log, log_offset)
        {
            // The sandbox, not the program, gave up: the runtime could not start it.
            return start_error(format!("failed to start container process: {failure}"));
        }
        let message = self.termination_message(code, &termination, &log, log_offset);
        Ended {
            terminated: Terminated::exited(code, message, started_at, finished_at),
            stopping,
        }
    }

    /// What a runtime checks before it starts a process: the program exists in
    /// the container's view, the termination message file is fresh. Returns
    /// where this run's output starts in the log.
    fn preflight(&self, launch: &LaunchSpec) -> Result<u64, String> {
        let path = launch
            .env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let program = launch.argv.first().cloned().unwrap_or_default();
        if spec::find_program(&program, &path, &launch.mounts).is_none() {
            return Err(if program.contains('/') {
                format!(
                    "failed to start container process: exec: \"{program}\": stat {program}: no such file or directory"
                )
            } else {
                format!(
                    "failed to start container process: exec: \"{program}\": executable file not found in $PATH"
                )
            });
        }
        let termination = self.termination_file();
        let prepared = (|| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::write(&termination, b"")?;
            std::fs::set_permissions(&termination, std::fs::Permissions::from_mode(0o666))
        })();
        prepared.map_err(|e| format!("cannot create the termination message file: {e}"))?;
        Ok(std::fs::metadata(self.log_file())
            .map(|m| m.len())
            .unwrap_or(0))
    }

    /// Starts the readiness and liveness probers of a started container.
    fn start_probes(
        &self,
        probes: &mut AbortOnDrop,
        target: &Target,
        live_tx: Option<tokio::sync::mpsc::Sender<()>>,
    ) {
        if let Some(probe) = self.container.readiness_probe.clone() {
            probes.0.push(tokio::spawn(readiness_loop(
                probe,
                self.container.clone(),
                target.clone(),
                self.ctx.node.clone(),
                self.shared.clone(),
                self.slot,
            )));
        }
        if let (Some(probe), Some(tx)) = (self.container.liveness_probe.clone(), live_tx) {
            probes.0.push(tokio::spawn(liveness_loop(
                probe,
                self.container.clone(),
                target.clone(),
                self.ctx.node.clone(),
                tx,
            )));
        }
    }

    /// The termination message file's content, or with `FallbackToLogsOnError`
    /// and a failed empty-handed exit the log's tail, as the kubelet reads them.
    fn termination_message(&self, code: i32, file: &Path, log: &Path, offset: u64) -> String {
        let message = std::fs::read(file).unwrap_or_default();
        let fallback =
            self.container.termination_message_policy.as_deref() == Some("FallbackToLogsOnError");
        let log = match message.is_empty() && fallback && code != 0 {
            true => std::fs::read(log).unwrap_or_default(),
            false => Vec::new(),
        };
        let run = &log[(offset as usize).min(log.len())..];
        termination_text(&message, run, fallback && code != 0)
    }
}

/// The kubelet's limits: a message file's last 4 KiB; a log's last 80 lines,
/// of them the last 2 KiB (`tail.ReadAtMost` upstream: the end is kept).
const MESSAGE_BYTES: usize = 4096;
const LOG_LINES: usize = 80;
const LOG_BYTES: usize = 2048;

/// What the container's status says it ended with: the message file's end,
/// or, when that is empty and `from_log` (a failed exit with
/// `FallbackToLogsOnError`), the end of this run's log.
fn termination_text(message: &[u8], log: &[u8], from_log: bool) -> String {
    let last = |bytes: &[u8], max: usize| -> String {
        String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(max)..]).into_owned()
    };
    if !message.is_empty() || !from_log {
        return last(message, MESSAGE_BYTES);
    }
    let text = String::from_utf8_lossy(log);
    let lines: Vec<&str> = text.lines().collect();
    last(
        lines[lines.len().saturating_sub(LOG_LINES)..]
            .join("\n")
            .as_bytes(),
        LOG_BYTES,
    )
}

/// The container's `lifecycle.preStop.sleep` (the only hook this kubelet runs).
fn pre_stop_sleep(container: &Container) -> Duration {
    container
        .lifecycle
        .as_ref()
        .and_then(|l| l.pre_stop.as_ref())
        .and_then(|h| h.sleep.as_ref())
        .map(|s| Duration::from_secs(s.seconds.max(0) as u64))
        .unwrap_or_default()
}

/// The grace period once the pod is being deleted (0 if the kubelet is gone).
async fn grace_when_stopped(stop: &mut watch::Receiver<Option<u64>>) -> u64 {
    stop.wait_for(Option::is_some)
        .await
        .map(|g| g.unwrap_or(0))
        .unwrap_or(0)
}

/// The first line this run wrote, when it is bubblewrap's or setpriv's own
/// complaint (a mount or identity it could not set up, a program it could not
/// exec) rather than the program's output.
fn sandbox_failure(log: &Path, offset: u64) -> Option<String> {
    let bytes = std::fs::read(log).ok()?;
    let run = bytes.get(offset as usize..)?;
    let first = String::from_utf8_lossy(run).lines().next()?.to_string();
    (first.starts_with("bwrap: ") || first.starts_with("setpriv: ")).then_some(first)
}

/// SIGTERM to the container's PID 1, SIGKILL once `grace` has passed.
async fn terminate(
    pid: i32,
    bwrap_pid: i32,
    wait: &mut JoinHandle<std::io::Result<std::process::ExitStatus>>,
    grace: Duration,
) -> std::io::Result<std::process::ExitStatus> {
    signal(pid, libc::SIGTERM);
    if let Ok(status) = tokio::time::timeout(grace, &mut *wait).await {
        return status.unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
    }
    signal(pid, libc::SIGKILL);
    signal(bwrap_pid, libc::SIGKILL);
    wait.await
        .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
}

/// A probe's cadence, as the kubelet's prober worker keeps it: one attempt
/// every period from the start of the last (a ticker that skips the ticks a
/// long attempt missed), not a period after the attempt's end.
fn probe_ticks(period: Duration) -> tokio::time::Interval {
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    ticks
}

async fn readiness_loop(
    probe: Probe,
    container: Container,
    target: Target,
    node: Arc<NetnsRuntime>,
    shared: Arc<Shared>,
    slot: Slot,
) {
    let timing = probes::timing(&probe);
    tokio::time::sleep(timing.initial_delay).await;
    let mut ticks = probe_ticks(timing.period);
    let (mut successes, mut failures, mut ready) = (0u32, 0u32, false);
    loop {
        ticks.tick().await;
        let ok = probes::attempt(&probe, &container, &target, &node, timing.timeout).await;
        if ok {
            successes += 1;
            failures = 0;
        } else {
            failures += 1;
            successes = 0;
        }
        let now_ready = if ok && successes >= timing.success_threshold {
            true
        } else if !ok && failures >= timing.failure_threshold {
            false
        } else {
            ready
        };
        if now_ready != ready {
            ready = now_ready;
            shared.update(slot, |c| c.ready = ready);
            shared.publish().await;
        }
    }
}

/// The startup probe until it succeeds (true) or fails `failureThreshold`
/// times in a row (false); true at once without one.
async fn startup_phase(
    probe: Option<Probe>,
    container: Container,
    target: Target,
    node: Arc<NetnsRuntime>,
) -> bool {
    let Some(probe) = probe else {
        return true;
    };
    let timing = probes::timing(&probe);
    tokio::time::sleep(timing.initial_delay).await;
    let mut ticks = probe_ticks(timing.period);
    let mut failures = 0u32;
    loop {
        ticks.tick().await;
        if probes::attempt(&probe, &container, &target, &node, timing.timeout).await {
            return true;
        }
        failures += 1;
        if failures >= timing.failure_threshold {
            return false;
        }
    }
}

async fn liveness_loop(
    probe: Probe,
    container: Container,
    target: Target,
    node: Arc<NetnsRuntime>,
    failed: tokio::sync::mpsc::Sender<()>,
) {
    let timing = probes::timing(&probe);
    tokio::time::sleep(timing.initial_delay).await;
    let mut ticks = probe_ticks(timing.period);
    let mut failures = 0u32;
    loop {
        ticks.tick().await;
        if probes::attempt(&probe, &container, &target, &node, timing.timeout).await {
            failures = 0;
        } else {
            failures += 1;
            if failures >= timing.failure_threshold {
                let _ = failed.send(()).await;
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_of_a_long_message_or_log_is_kept() {
        let message: Vec<u8> = (0..5000).map(|i| b'a' + (i % 26) as u8).collect();
        let kept = termination_text(&message, b"", true);
        assert_eq!(kept.len(), MESSAGE_BYTES);
        assert!(message.ends_with(kept.as_bytes()));
        let log: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let tail = termination_text(b"", log.as_bytes(), true);
        assert!(
            tail.starts_with("line 20\n") && tail.ends_with("line 99"),
            "{tail}"
        );
        assert_eq!(termination_text(b"", log.as_bytes(), false), "");
    }
}
