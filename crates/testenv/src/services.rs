//! A Service's endpoints as kube-proxy reads them, for tests that need to see
//! the endpoints themselves: its EndpointSlices (kept by the cluster's real
//! endpoint-slice controller), the endpoints ready and not terminating.
//! Clients reach a Service through its ClusterIP ([`crate::load`]).

use std::net::{IpAddr, SocketAddr};

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::ListParams;
use kube::{Api, Client};

use crate::error::{Result, TestEnvError};

/// The addresses kube-proxy would send `service`'s traffic to: endpoints whose
/// `ready` condition is true and `terminating` is not, on the port named
/// `port_name` (or the slice's only port when `None`). Sorted, deduplicated.
pub async fn ready_endpoints(
    client: &Client,
    namespace: &str,
    service: &str,
    port_name: Option<&str>,
) -> Result<Vec<SocketAddr>> {
    let api: Api<EndpointSlice> = Api::namespaced(client.clone(), namespace);
    let slices = api
        .list(&ListParams::default().labels(&format!("kubernetes.io/service-name={service}")))
        .await?;
    let mut out = Vec::new();
    for slice in slices.items {
        out.extend(
            ready_in_slice(&slice, port_name).map_err(|detail| TestEnvError::Service {
                service: format!("{namespace}/{service}"),
                detail,
            })?,
        );
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The ready, non-terminating addresses of one slice (pure).
pub fn ready_in_slice(
    slice: &EndpointSlice,
    port_name: Option<&str>,
) -> Result<Vec<SocketAddr>, String> {
    let ports = slice.ports.clone().unwrap_or_default();
    let port = match port_name {
        Some(name) => ports.iter().find(|p| p.name.as_deref() == Some(name)),
        None if ports.len() <= 1 => ports.first(),
        None => return Err("the service has several ports: name one".into()),
    };
    let Some(port) = port
        .and_then(|p| p.port)
        .and_then(|p| u16::try_from(p).ok())
    else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for endpoint in slice.endpoints.iter().flatten() {
        let conditions = endpoint.conditions.clone().unwrap_or_default();
        // An endpoint without a ready condition counts as ready (the API's rule).
        let ready = conditions.ready.unwrap_or(true);
        let terminating = conditions.terminating.unwrap_or(false);
        if !ready || terminating {
            continue;
        }
        for address in &endpoint.addresses {
            if let Ok(ip) = address.parse::<IpAddr>() {
                out.push(SocketAddr::new(ip, port));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ready_non_terminating_endpoints_are_listed() {
        let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s"},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080}],
            "endpoints": [
                {"addresses": ["10.245.1.2"], "conditions": {"ready": true}},
                {"addresses": ["10.245.1.3"], "conditions": {"ready": false}},
                {"addresses": ["10.245.1.4"], "conditions": {"ready": true, "terminating": true}},
                {"addresses": ["10.245.1.5"], "conditions": {"ready": true, "terminating": false}}
            ]
        }))
        .expect("slice");
        let ready = ready_in_slice(&slice, Some("http")).expect("ready");
        assert_eq!(
            ready,
            vec![
                "10.245.1.2:8080".parse().expect("addr"),
                "10.245.1.5:8080".parse().expect("addr")
            ]
        );
    }
}
