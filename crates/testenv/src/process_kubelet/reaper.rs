//! Containers left behind by a test process that was killed (SIGKILL, a
//! timeout, a panic in the exit path): its guards and exit hook never ran, and
//! the parent-death signal does not reach containers of another user (see
//! `sandbox.rs`), so MariaDB, RabbitMQ or OpenStack processes would keep
//! running. Every container carries its owner in its environment, and each
//! new process kubelet kills the containers whose owner is gone.

use std::path::Path;

/// The environment variable naming a container's owner: `<pid>:<start time>`
/// of the test process whose kubelet started it (the start time tells a
/// reused pid from the owner).
pub const OWNER_VAR: &str = "RATCHET_CONTAINER_OWNER";

/// This process's owner mark.
pub fn owner_mark() -> String {
    let pid = std::process::id();
    let started = start_time(&Path::new("/proc").join(pid.to_string())).unwrap_or_default();
    format!("{pid}:{started}")
}

/// Kills every process carrying an owner mark whose owner no longer runs;
/// returns their pids. Killing a container's PID 1 ends its whole PID
/// namespace.
pub fn reap_orphans() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut killed = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Some(mark) = owner_of(&entry.path()) else {
            continue;
        };
        if !owner_alive(&mark) {
            // SAFETY: sends a signal; a pid that has just exited is harmless.
            if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                killed.push(pid);
            }
        }
    }
    killed
}

/// The owner mark in a process's environment, if it has one.
fn owner_of(proc_dir: &Path) -> Option<String> {
    let environ = std::fs::read(proc_dir.join("environ")).ok()?;
    let prefix = format!("{OWNER_VAR}=");
    environ
        .split(|b| *b == 0)
        .filter_map(|entry| std::str::from_utf8(entry).ok())
        .find_map(|entry| entry.strip_prefix(&prefix).map(str::to_string))
}

/// Whether the process a mark names still runs (same pid, same start time).
fn owner_alive(mark: &str) -> bool {
    let Some((pid, started)) = mark.split_once(':') else {
        return false;
    };
    start_time(&Path::new("/proc").join(pid)).is_some_and(|now| now == started)
}

/// A process's start time in clock ticks since boot (field 22 of its `stat`;
/// the command name before it may hold spaces and parentheses).
fn start_time(proc_dir: &Path) -> Option<String> {
    let stat = std::fs::read_to_string(proc_dir.join("stat")).ok()?;
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(19).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    fn sleeper(mark: &str) -> std::process::Child {
        Command::new("sleep")
            .arg("300")
            .env(OWNER_VAR, mark)
            .spawn()
            .expect("sleep starts")
    }

    #[test]
    fn orphans_are_killed_and_containers_of_a_live_owner_are_not() {
        let own = owner_mark();
        assert!(owner_alive(&own), "{own}");
        let (pid, _) = own.split_once(':').expect("a mark");
        // Our pid with another start time: a reused pid, its owner gone.
        let mut orphan = sleeper(&format!("{pid}:1"));
        let mut kept = sleeper(&own);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        // The child's environment is readable once it has exec'd.
        while owner_of(&Path::new("/proc").join(orphan.id().to_string())).is_none() {
            assert!(std::time::Instant::now() < deadline, "no mark seen");
            std::thread::yield_now();
        }
        let killed = reap_orphans();
        assert!(killed.contains(&(orphan.id() as i32)), "{killed:?}");
        assert_eq!(orphan.wait().expect("reaped").signal(), Some(libc::SIGKILL));
        assert!(
            kept.try_wait().expect("status").is_none(),
            "a live owner's container was killed"
        );
        let _ = kept.kill();
        let _ = kept.wait();
    }

    #[test]
    fn a_mark_without_a_start_time_or_pid_names_no_live_owner() {
        assert!(!owner_alive("garbage"));
        assert!(!owner_alive("999999999:1"));
    }
}
