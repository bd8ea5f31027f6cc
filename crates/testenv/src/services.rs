//! Reaching a Service the way kube-proxy would, for test load clients: read
//! its EndpointSlices (kept by the cluster's real endpoint-slice controller),
//! keep the endpoints that are ready and not terminating, and spread requests
//! over them round-robin. There is no kube-proxy and no ClusterIP routing:
//! clients connect to pod addresses from a client network namespace
//! ([`crate::ClientNetns`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// Round-robin over a fixed set of endpoints.
#[derive(Debug, Default)]
pub struct RoundRobin {
    endpoints: Vec<SocketAddr>,
    next: AtomicUsize,
}

impl RoundRobin {
    pub fn new(endpoints: Vec<SocketAddr>) -> RoundRobin {
        RoundRobin {
            endpoints,
            next: AtomicUsize::new(0),
        }
    }

    /// The next endpoint, or `None` when there is none.
    pub fn pick(&self) -> Option<SocketAddr> {
        if self.endpoints.is_empty() {
            return None;
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.endpoints.get(n % self.endpoints.len()).copied()
    }

    pub fn endpoints(&self) -> &[SocketAddr] {
        &self.endpoints
    }
}

/// A Service as a load client sees it: its ready endpoints, refreshed on
/// demand (during a roll, say), picked round-robin.
pub struct ServiceEndpoints {
    client: Client,
    namespace: String,
    service: String,
    port_name: Option<String>,
    endpoints: RoundRobin,
}

impl ServiceEndpoints {
    /// Reads the Service's ready endpoints once.
    pub async fn new(
        client: &Client,
        namespace: &str,
        service: &str,
        port_name: Option<&str>,
    ) -> Result<ServiceEndpoints> {
        let mut endpoints = ServiceEndpoints {
            client: client.clone(),
            namespace: namespace.to_string(),
            service: service.to_string(),
            port_name: port_name.map(str::to_string),
            endpoints: RoundRobin::default(),
        };
        endpoints.refresh().await?;
        Ok(endpoints)
    }

    /// Re-reads the EndpointSlices; the round-robin position carries on.
    pub async fn refresh(&mut self) -> Result<&[SocketAddr]> {
        let ready = ready_endpoints(
            &self.client,
            &self.namespace,
            &self.service,
            self.port_name.as_deref(),
        )
        .await?;
        let next = self.endpoints.next.load(Ordering::Relaxed);
        self.endpoints = RoundRobin {
            endpoints: ready,
            next: AtomicUsize::new(next),
        };
        Ok(self.endpoints.endpoints())
    }

    /// The next ready endpoint, or an error naming the Service when none is ready.
    pub fn pick(&self) -> Result<SocketAddr> {
        self.endpoints.pick().ok_or_else(|| TestEnvError::Service {
            service: format!("{}/{}", self.namespace, self.service),
            detail: "no ready endpoint".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ready_non_terminating_endpoints_are_picked_in_turn() {
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
        let rr = RoundRobin::new(ready.clone());
        let picks: Vec<_> = (0..4).filter_map(|_| rr.pick()).collect();
        assert_eq!(picks, vec![ready[0], ready[1], ready[0], ready[1]]);
    }
}
