//! Child processes of the control plane: started with their output in a log
//! file, killed on drop, and killed by the kernel if this process dies first.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, not
//! the process. Test harnesses run each test on its own short-lived thread, so
//! children are forked from one dedicated thread that lives as long as the
//! process: when the test binary exits (or panics, or is killed) the thread dies
//! with it and the kernel sends SIGKILL to every component. Nothing leaks even
//! for a cluster kept in a `static` that is never dropped.

use std::fs::File;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use crate::error::{IoContext, Result, TestEnvError};

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("testenv-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    // A closed reply channel only means the requester gave up.
                    let _ = reply.send(command.spawn());
                }
            })
            .map(|_| ())
            .unwrap_or_else(|e| panic!("cannot start the process spawner thread: {e}"));
        Mutex::new(tx)
    })
}

pub(crate) fn spawn_tied_to_process(mut command: Command) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs between fork and exec and only calls
    // async-signal-safe functions (prctl, getppid).
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl.
            if libc::getppid() == 1 {
                return Err(std::io::Error::other("parent exited during spawn"));
            }
            Ok(())
        });
    }
    let (reply_tx, reply_rx) = mpsc::channel();
    spawner()
        .lock()
        .map_err(|_| std::io::Error::other("spawner lock poisoned"))?
        .send((command, reply_tx))
        .map_err(|_| std::io::Error::other("spawner thread is gone"))?;
    reply_rx
        .recv()
        .map_err(|_| std::io::Error::other("spawner thread dropped the request"))?
}

/// One running component of the control plane, restartable in place (same
/// binary, flags, ports and data).
pub struct ManagedProcess {
    component: &'static str,
    child: Child,
    binary: PathBuf,
    args: Vec<String>,
    log: PathBuf,
}

impl ManagedProcess {
    pub fn start(
        component: &'static str,
        binary: &Path,
        args: &[String],
        log: PathBuf,
    ) -> Result<ManagedProcess> {
        let out = File::create(&log).at(&log)?;
        let child = spawn(component, binary, args, &log, out)?;
        Ok(ManagedProcess {
            component,
            child,
            binary: binary.to_path_buf(),
            args: args.to_vec(),
            log,
        })
    }

    /// Starts the process again as it was first started (after [`Self::stop`],
    /// or kills it first), appending to its log.
    pub fn restart(&mut self) -> Result<()> {
        self.stop();
        let out = File::options().append(true).open(&self.log).at(&self.log)?;
        self.child = spawn(self.component, &self.binary, &self.args, &self.log, out)?;
        Ok(())
    }

    pub fn component(&self) -> &'static str {
        self.component
    }

    pub fn log(&self) -> &Path {
        &self.log
    }

    /// The last lines of the component's log, for error messages.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log, lines)
    }

    /// An error if the process has exited; names the cause when the log shows a
    /// port clash, the common failure when many clusters start side by side.
    pub fn check_alive(&mut self) -> Result<()> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(self.exited(status.to_string())),
            Err(e) => Err(self.exited(format!("unknown ({e})"))),
        }
    }

    fn exited(&self, status: String) -> TestEnvError {
        let tail = self.log_tail(30);
        if tail.contains("address already in use") {
            TestEnvError::PortInUse {
                component: self.component,
                log: self.log.clone(),
            }
        } else {
            TestEnvError::ExitedEarly {
                component: self.component,
                status,
                log: self.log.clone(),
                tail,
            }
        }
    }

    /// Polls `probe` until it answers true, failing fast when the process exits
    /// and with the log's tail when `timeout` passes.
    pub async fn wait_ready<F, Fut>(&mut self, timeout: Duration, mut probe: F) -> Result<()>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        let deadline = Instant::now() + timeout;
        let mut interval = Duration::from_millis(20);
        loop {
            self.check_alive()?;
            if probe().await {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(TestEnvError::NotReady {
                    component: self.component,
                    seconds: timeout.as_secs(),
                    log: self.log.clone(),
                    tail: self.log_tail(30),
                });
            }
            tokio::time::sleep(interval).await;
            interval = (interval * 2).min(Duration::from_millis(250));
        }
    }

    /// Stops the process and waits for it, so its ports and files are free.
    pub fn stop(&mut self) {
        // Already-exited processes make kill fail; either way we reap it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ManagedProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn(
    component: &'static str,
    binary: &Path,
    args: &[String],
    log: &Path,
    out: File,
) -> Result<Child> {
    let err = out.try_clone().at(log)?;
    let mut command = Command::new(binary);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    spawn_tied_to_process(command).map_err(|source| TestEnvError::Spawn { component, source })
}

pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
