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

fn command(config_dir: &str, args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut command = vec!["python3".to_string(), format!("{config_dir}/{SCRIPT_FILE}")];
    command.extend(args);
    command
}

/// The API answers `path` on `port` without a server error (401 counts: its
/// authentication is up).
pub fn api(config_dir: &str, port: i32, path: &str) -> Readiness {
    Readiness {
        command: command(
            config_dir,
            ["http".to_string(), port.to_string(), path.to_string()],
        ),
        period_seconds: 5,
    }
}

/// A filter value standing for the container's host name (the pod's name).
pub const OWN_HOSTNAME: &str = "@hostname";

/// A heartbeat row of `table` matching `filters` was written since the
/// container started and within `max_age_seconds`.
pub fn heartbeat(
    config_dir: &str,
    table: &str,
    max_age_seconds: u32,
    filters: &[(&str, &str)],
) -> Readiness {
    let mut args = vec![
        "heartbeat".to_string(),
        table.to_string(),
        max_age_seconds.to_string(),
    ];
    args.extend(
        filters
            .iter()
            .map(|(column, value)| format!("{column}={value}")),
    );
    Readiness {
        command: command(config_dir, args),
        period_seconds: 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_name_the_script_in_the_config_directory() {
        assert_eq!(
            api("/etc/cinder", 8776, "/v3/").command,
            [
                "python3",
                "/etc/cinder/ratchet-readiness.py",
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
                "heartbeat",
                "services",
                "60",
                "binary=cinder-scheduler"
            ]
        );
    }
}
