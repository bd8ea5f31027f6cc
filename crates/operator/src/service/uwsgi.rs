//! The command of an API served by uWSGI: the WSGI server an image provides
//! for a service that ships an application, not a server (Keystone, Glance).

/// uWSGI in the foreground, serving `module` over HTTP on `port` with two
/// workers, then `extra` flags of the service's own. SIGTERM stops it (uWSGI's
/// default is to reload) and, through the master-start hook, lets each worker
/// finish the request it holds: with `--die-on-term` alone uWSGI kills its
/// workers mid-request (checked with pyuwsgi 2.0.30). An application that does
/// not load ends it. Every response says `Connection: close`: uWSGI's HTTP
/// socket answers HTTP/1.1 without it and then closes the connection, so a
/// client that keeps it for its next request may send into a closed socket
/// and be reset (one request in hundreds under the real Glance test's load).
pub fn http_command(port: i32, module: &str, extra: &[&str]) -> Vec<String> {
    let socket = format!(":{port}");
    let common = [
        "uwsgi",
        "--http-socket",
        &socket,
        "--module",
        module,
        "--master",
        "--processes",
        "2",
        "--die-on-term",
        "--hook-master-start",
        "unix_signal:15 gracefully_kill_them_all",
        "--need-app",
        "--disable-logging",
        "--add-header",
        "Connection: close",
    ];
    common.iter().chain(extra).map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigterm_is_graceful_no_connection_is_kept_and_the_service_flags_come_last() {
        let command = http_command(5000, "app.wsgi:application", &["--lazy-apps"]);
        let hook = command
            .iter()
            .position(|a| a == "--hook-master-start")
            .expect("the hook");
        assert_eq!(command[hook + 1], "unix_signal:15 gracefully_kill_them_all");
        let header = command
            .iter()
            .position(|a| a == "--add-header")
            .expect("a header");
        assert_eq!(command[header + 1], "Connection: close");
        assert!(command.contains(&":5000".to_string()));
        assert_eq!(command.last().map(String::as_str), Some("--lazy-apps"));
    }
}
