//! Waiting on cluster state with a timeout, driven by watch events (never by
//! sleeping and re-reading).

use std::fmt::Debug;
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

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
        .default_backoff()
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
    match outcome {
        Ok(Some(found)) => Ok(found),
        _ => Err(WaitTimeout {
            what: what.to_string(),
            timeout,
            last: format!("{last:#?}"),
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
