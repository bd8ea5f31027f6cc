//! A client that counts the requests it sends (the operator's API cost).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use kube::Client;
use kube::client::ClientBuilder;
use tower::{Layer, Service};

/// Requests by class (`GET jobs`, `PATCH deployments`, `WATCH configmaps` …).
#[derive(Clone, Default)]
pub struct RequestCounter(Arc<Mutex<BTreeMap<String, u64>>>);

impl RequestCounter {
    /// The requests since the last take, in total.
    pub fn take(&self) -> u64 {
        self.take_by_class().values().sum()
    }

    /// The requests since the last take, by class.
    pub fn take_by_class(&self) -> BTreeMap<String, u64> {
        self.0
            .lock()
            .map(|mut counts| std::mem::take(&mut *counts))
            .unwrap_or_default()
    }

    fn count(&self, class: String) {
        if let Ok(mut counts) = self.0.lock() {
            *counts.entry(class).or_default() += 1;
        }
    }
}

/// `METHOD resource[/subresource]`, `LIST resource` for a collection GET
/// and `WATCH resource` for a watch: what a request costs the API server.
fn request_class(method: &http::Method, uri: &http::Uri) -> String {
    let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    let after_version = match segments.first() {
        Some(&"api") => 2,
        _ => 3,
    };
    let rest = segments.get(after_version..).unwrap_or_default();
    let rest = match rest {
        ["namespaces", _, tail @ ..] if !tail.is_empty() => tail,
        other => other,
    };
    let watch = uri.query().is_some_and(|q| q.contains("watch=true"));
    let verb = match (method.as_str(), rest.len(), watch) {
        (_, _, true) => "WATCH",
        ("GET", 1, false) => "LIST",
        (other, _, _) => other,
    };
    let resource = rest.first().copied().unwrap_or("?");
    match rest.get(2) {
        Some(sub) => format!("{verb} {resource}/{sub}"),
        None => format!("{verb} {resource}"),
    }
}

#[derive(Clone)]
pub struct CountLayer(RequestCounter);

#[derive(Clone)]
pub struct CountService<S> {
    inner: S,
    counter: RequestCounter,
}

impl<S> Layer<S> for CountLayer {
    type Service = CountService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        CountService {
            inner,
            counter: self.0.clone(),
        }
    }
}

impl<S, B> Service<http::Request<B>> for CountService<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        self.counter.count(request_class(req.method(), req.uri()));
        self.inner.call(req)
    }
}

/// A client for `config` whose requests are counted by the returned counter.
/// Watch requests count once each, when opened.
pub fn counting_client(config: kube::Config) -> anyhow::Result<(Client, RequestCounter)> {
    let counter = RequestCounter::default();
    let client = ClientBuilder::try_from(config)?
        .with_layer(&CountLayer(counter.clone()))
        .build();
    Ok((client, counter))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(method: &str, uri: &str) -> String {
        let method = http::Method::from_bytes(method.as_bytes()).expect("a method");
        request_class(&method, &uri.parse().expect("a URI"))
    }

    #[test]
    fn requests_are_classed_by_verb_and_resource() {
        assert_eq!(
            class("GET", "/apis/batch/v1/namespaces/ns/jobs/c-db-expand"),
            "GET jobs"
        );
        assert_eq!(
            class("GET", "/apis/batch/v1/namespaces/ns/jobs?labelSelector=a"),
            "LIST jobs"
        );
        assert_eq!(
            class(
                "GET",
                "/apis/apps/v1/deployments?watch=true&resourceVersion=1"
            ),
            "WATCH deployments"
        );
        assert_eq!(
            class(
                "PATCH",
                "/apis/cinder.openstack.c5c3.io/v1beta1/namespaces/ns/cinders/c/status"
            ),
            "PATCH cinders/status"
        );
        assert_eq!(class("POST", "/api/v1/namespaces/ns/events"), "POST events");
        assert_eq!(
            class("GET", "/api/v1/namespaces/ns/secrets/db"),
            "GET secrets"
        );
    }
}
