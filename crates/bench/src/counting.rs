//! A client that counts the requests it sends (the operator's API cost).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use kube::Client;
use kube::client::ClientBuilder;
use tower::{Layer, Service};

#[derive(Clone, Default)]
pub struct RequestCounter(Arc<AtomicU64>);

impl RequestCounter {
    pub fn take(&self) -> u64 {
        self.0.swap(0, Ordering::Relaxed)
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
        self.counter.0.fetch_add(1, Ordering::Relaxed);
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
