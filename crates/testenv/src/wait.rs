//! Waiting on cluster state with a timeout, driven by watch events (never by
//! sleeping and re-reading).

use std::fmt::Debug;
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

/// A watch's retry after an error: 100 ms doubling to 1 s, so waits and the
/// simulated kubelet are back within a second of an API-server restart
/// (kube's default waits up to 30 s, longer than the outages tests cause).
pub fn fast_backoff() -> watcher::ExponentialBackoff {
    backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(Duration::from_secs(1))
        .with_jitter()
        .without_max_times()
        .into()
}

/// The condition did not hold in time; carries the last state seen.
#[derive(Debug, thiserror::Error)]
#[error("timed out after {timeout:?} waiting for {what}; last seen: {last}")]
pub struct WaitTimeout {
    pub what: String,
    pub timeout: Duration,
    pub last: String,
}

/// Watches one object and calls `check` with every version of it (and `None`
/// while it does not exist) until `check` returns true. Returns the object that
/// satisfied it (`None` if absence did).
pub async fn watch_object<K, F>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    what: &str,
    mut check: F,
) -> Result<Option<K>, WaitTimeout>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    F: FnMut(Option<&K>) -> bool,
{
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut stream = watcher::watcher(api.clone(), config)
        .backoff(fast_backoff())
        .boxed();
    let mut last: Option<K> = None;
    let mut listed_present = false;
    let outcome = tokio::time::timeout(timeout, async {
        while let Some(event) = stream.next().await {
            match event {
                Ok(Event::Apply(obj) | Event::InitApply(obj)) => {
                    listed_present = true;
                    let done = check(Some(&obj));
                    last = Some(obj);
                    if done {
                        return last.clone().map(Some);
                    }
                }
                Ok(Event::Delete(_)) => {
                    last = None;
                    if check(None) {
                        return Some(None);
                    }
                }
                Ok(Event::Init) => listed_present = false,
                Ok(Event::InitDone) => {
                    if !listed_present && check(None) {
                        return Some(None);
                    }
                }
                Err(e) => tracing::debug!(error = %e, "watch error while waiting"),
            }
        }
        None
    })
    .await;
    found_in_time(outcome, what, timeout, || {
        // Managed fields would bury the status a failing test needs to show.
        if let Some(obj) = last.as_mut() {
            obj.meta_mut().managed_fields = None;
        }
        format!("{last:#?}")
    })
}

/// What a bounded wait found, or the timeout with the last state seen.
fn found_in_time<T>(
    outcome: Result<Option<T>, tokio::time::error::Elapsed>,
    what: &str,
    timeout: Duration,
    last: impl FnOnce() -> String,
) -> Result<T, WaitTimeout> {
    match outcome {
        Ok(Some(found)) => Ok(found),
        _ => Err(WaitTimeout {
            what: what.to_string(),
            timeout,
            last: last(),
        }),
    }
}

/// Waits until the object exists and satisfies `check`.
pub async fn until<K, F>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    what: &str,
    mut check: F,
) -> Result<K, WaitTimeout>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    F: FnMut(&K) -> bool,
{
    let found = watch_object(api, name, timeout, what, |obj| obj.is_some_and(&mut check)).await?;
    found.ok_or_else(|| WaitTimeout {
        what: what.to_string(),
        timeout,
        last: "object vanished".into(),
    })
}

/// Waits until the object no longer exists.
pub async fn until_deleted<K>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
) -> Result<(), WaitTimeout>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    watch_object(
        api,
        name,
        timeout,
        &format!("{name} to be deleted"),
        |obj| obj.is_none(),
    )
    .await
    .map(|_| ())
}

/// Waits until `count` objects exist in the Api's scope and every one of them
/// satisfies `check`: one watch for the whole collection, however large.
pub async fn until_every<K, F>(
    api: &Api<K>,
    count: usize,
    timeout: Duration,
    what: &str,
    mut check: F,
) -> Result<(), WaitTimeout>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    F: FnMut(&K) -> bool,
{
    let mut stream = watcher::watcher(api.clone(), watcher::Config::default())
        .backoff(fast_backoff())
        .boxed();
    // Name → whether that object satisfied `check` in its latest version.
    let mut satisfied: std::collections::BTreeMap<String, bool> = Default::default();
    let mut listing = Default::default();
    let done = |seen: &std::collections::BTreeMap<String, bool>| {
        seen.len() == count && seen.values().all(|ok| *ok)
    };
    let outcome = tokio::time::timeout(timeout, async {
        while let Some(event) = stream.next().await {
            match event {
                Ok(Event::Init) => listing = std::collections::BTreeMap::new(),
                Ok(Event::InitApply(obj)) => {
                    let ok = check(&obj);
                    listing.insert(obj.meta().name.clone().unwrap_or_default(), ok);
                }
                Ok(Event::InitDone) => satisfied = std::mem::take(&mut listing),
                Ok(Event::Apply(obj)) => {
                    let ok = check(&obj);
                    satisfied.insert(obj.meta().name.clone().unwrap_or_default(), ok);
                }
                Ok(Event::Delete(obj)) => {
                    satisfied.remove(obj.meta().name.as_deref().unwrap_or_default());
                }
                Err(e) => tracing::debug!(error = %e, "watch error while waiting"),
            }
            if done(&satisfied) {
                return true;
            }
        }
        false
    })
    .await;
    match outcome {
        Ok(true) => Ok(()),
        _ => Err(WaitTimeout {
            what: what.to_string(),
            timeout,
            last: format!(
                "{} objects, {} not yet satisfying",
                satisfied.len(),
                satisfied.values().filter(|ok| !**ok).count()
            ),
        }),
    }
}

/// Waits until some object in the Api's scope satisfies `check` (one watch of
/// the collection) and returns it.
pub async fn until_any<K, F>(
    api: &Api<K>,
    timeout: Duration,
    what: &str,
    mut check: F,
) -> Result<K, WaitTimeout>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    F: FnMut(&K) -> bool,
{
    let mut stream = watcher::watcher(api.clone(), watcher::Config::default())
        .backoff(fast_backoff())
        .applied_objects()
        .boxed();
    let mut seen = 0usize;
    let outcome = tokio::time::timeout(timeout, async {
        while let Some(event) = stream.next().await {
            match event {
                Ok(object) if check(&object) => return Some(object),
                Ok(_) => seen += 1,
                Err(e) => tracing::debug!(error = %e, "watch error while waiting"),
            }
        }
        None
    })
    .await;
    found_in_time(outcome, what, timeout, || {
        format!("{seen} objects seen, none satisfying")
    })
}
