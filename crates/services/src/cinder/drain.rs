//! How a Cinder volume back end is drained before its restart: disabled
//! through Cinder's API, so the scheduler sends it no new volume, and waited
//! on until none of its volumes, snapshots or backups is in a transitional
//! state (`drain.py`, shipped in the ConfigMap); enabled again once its
//! successor rolled out (docs/drain.md).

use ratchet_phase_machine::HostDrain;

use super::profile::CONFIG_DIR;

/// The script the drain Jobs run, beside the configuration.
pub const SCRIPT: (&str, &str) = ("ratchet-cinder-drain.py", include_str!("drain.py"));

/// How long the host must have nothing in flight: a scheduling decision taken
/// just before the disable lands within it.
pub const QUIET_SECONDS: u32 = 3;

/// The roles Cinder's user holds in the service project: `service`, and
/// `admin`, which disabling a service through the API takes (Cinder's
/// `volume_extension:services:update` is `rule:admin_api`). Deployment tools
/// grant service users `admin` there too.
pub const USER_ROLES: &[&str] = &["service", "admin"];

/// How long a drain waits for the host's operations before the restart goes
/// ahead anyway (the event then names what was still in flight): longer
/// than any create, delete or snapshot of the fake and file drivers, shorter
/// than a roll's progress deadline.
pub const BOUND_SECONDS: u32 = 120;

/// Which hosts a drain takes out of service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hosts<'a> {
    /// The workload's one host (a volume back end's `backend_host`).
    Named(&'a str),
    /// Each pod's own (the backup service's pods, registered under their
    /// names): drained pod by pod, the machine naming the pod last, after
    /// `--host`.
    EachPod,
}

/// The drain of the service `binary` on `hosts`, whose Cinder's API is
/// `api`; `disable`: whether a host is disabled first, which it is only when
/// another host can take new work meanwhile (a lone back end disabled would
/// fail every create with no valid host, a lone backup host every backup; it
/// is then only waited on).
pub fn host_drain(binary: &str, hosts: Hosts, api: &str, disable: bool) -> HostDrain {
    let host = match hosts {
        Hosts::Named(host) => Some(host),
        Hosts::EachPod => None,
    };
    let command = |action: &str| -> Vec<String> {
        [
            "python3",
            &format!("{CONFIG_DIR}/{}", SCRIPT.0),
            action,
            "--api",
            api,
            "--binary",
            binary,
        ]
        .into_iter()
        .chain(host.is_some().then_some("--host"))
        .chain(host)
        .map(str::to_string)
        .collect()
    };
    let each_pod = |mut command: Vec<String>| {
        if host.is_none() {
            command.push("--host".into());
        }
        command
    };
    let named = host.unwrap_or("each pod");
    let mut drain = command("drain");
    drain.extend([
        "--bound".to_string(),
        BOUND_SECONDS.to_string(),
        "--quiet".to_string(),
        QUIET_SECONDS.to_string(),
    ]);
    if disable {
        drain.push("--disable".into());
    }
    HostDrain {
        drain: each_pod(drain),
        undrain: each_pod(command("undrain")),
        waits_for: if disable {
            format!(
                "{binary} {named} disabled; none of its volumes, snapshots or backups in a \
                 transitional state for {QUIET_SECONDS} s (at most {BOUND_SECONDS} s)"
            )
        } else {
            format!(
                "none of the volumes, snapshots or backups of {binary} {named} in a transitional \
                 state for {QUIET_SECONDS} s (at most {BOUND_SECONDS} s)"
            )
        },
        per_pod: host.is_none(),
    }
}
