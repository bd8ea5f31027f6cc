//! Running one probe attempt as the kubelet would: `httpGet` and `tcpSocket`
//! from the node's network namespace to the pod's address (as a kubelet probes
//! from its host), `exec` inside the container's namespaces with its identity.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::network::NetnsRuntime;
use super::sandbox;
use super::spec::Identity;

/// What a probe needs about the running container.
#[derive(Clone, Debug)]
pub struct Target {
    pub pod_ip: IpAddr,
    pub pid: i32,
    pub identity: Identity,
    pub env: Vec<(String, String)>,
}

/// The probe's timing, with the API's defaults.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub initial_delay: Duration,
    pub period: Duration,
    pub timeout: Duration,
    pub success_threshold: u32,
    pub failure_threshold: u32,
}

pub fn timing(probe: &Probe) -> Timing {
    let secs =
        |v: Option<i32>, default: i32| Duration::from_secs(v.unwrap_or(default).max(0) as u64);
    Timing {
        initial_delay: secs(probe.initial_delay_seconds, 0),
        period: secs(probe.period_seconds, 10).max(Duration::from_secs(1)),
        timeout: secs(probe.timeout_seconds, 1).max(Duration::from_secs(1)),
        success_threshold: probe.success_threshold.unwrap_or(1).max(1) as u32,
        failure_threshold: probe.failure_threshold.unwrap_or(3).max(1) as u32,
    }
}

fn port(container: &Container, port: &IntOrString) -> Option<u16> {
    match port {
        IntOrString::Int(p) => u16::try_from(*p).ok(),
        IntOrString::String(name) => container
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .and_then(|p| u16::try_from(p.container_port).ok()),
    }
}

/// One attempt: true on success. Never panics; a probe it cannot run fails.
pub async fn attempt(
    probe: &Probe,
    container: &Container,
    target: &Target,
    node: &NetnsRuntime,
    timeout: Duration,
) -> bool {
    if let Some(http) = &probe.http_get {
        let Some(port) = port(container, &http.port) else {
            return false;
        };
        let host = http
            .host
            .as_deref()
            .and_then(|h| h.parse::<IpAddr>().ok())
            .unwrap_or(target.pod_ip);
        let path = http.path.clone().unwrap_or_else(|| "/".to_string());
        let addr = SocketAddr::new(host, port);
        return node
            .run(async move { tokio::time::timeout(timeout, http_status(addr, &path)).await })
            .await
            .ok()
            .and_then(|r| r.ok())
            .and_then(|r| r.ok())
            .is_some_and(|code| (200..400).contains(&code));
    }
    if let Some(tcp) = &probe.tcp_socket {
        let Some(port) = port(container, &tcp.port) else {
            return false;
        };
        let addr = SocketAddr::new(target.pod_ip, port);
        return node
            .run(async move {
                tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await
            })
            .await
            .is_ok_and(|r| r.is_ok_and(|c| c.is_ok()));
    }
    if let Some(exec) = &probe.exec {
        let command = exec.command.clone().unwrap_or_default();
        if command.is_empty() {
            return false;
        }
        let mut cmd = tokio::process::Command::new("/usr/bin/nsenter");
        cmd.args(sandbox::exec_command_line(
            target.pid,
            &target.identity,
            &command,
        ))
        .env_clear()
        .envs(target.env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
        let Ok(mut child) = cmd.spawn() else {
            return false;
        };
        return matches!(
            tokio::time::timeout(timeout, child.wait()).await,
            Ok(Ok(status)) if status.success()
        );
    }
    false
}

/// An HTTP/1.1 GET's status code.
pub async fn http_status(addr: SocketAddr, path: &str) -> std::io::Result<u16> {
    let (code, _) = http_get(addr, path).await?;
    Ok(code)
}

/// An HTTP/1.1 GET with `Connection: close`: status code and body.
pub async fn http_get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: kube-probe/1.36\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    let text = String::from_utf8_lossy(&response);
    let code = text
        .lines()
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP response from {addr}")))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((code, body))
}
