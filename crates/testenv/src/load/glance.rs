//! A client that keeps using a Glance API while it upgrades: every round it
//! creates an image record, uploads a small image into it, lists images and
//! downloads one uploaded earlier, comparing every byte with what it sent,
//! through the API Service's ClusterIP, from a client network namespace.
//! Once stopped it downloads every image it uploaded. Any transport error,
//! unexpected status or changed byte is a failure; nothing is retried to hide
//! one. Given credentials, it logs in to Keystone and sends its token
//! ([`super::auth`]); otherwise Glance must serve without authentication.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::auth::Credentials;
use super::{
    Made, Outcome, Request, RunningLoad, Session, exchange, start_load, transport_failure,
};
use crate::error::Result;
use crate::shared::ClientNetns;

/// An image the client uploaded: when, and what it holds.
#[derive(Clone, Debug)]
pub struct UploadedImage {
    pub at: SystemTime,
    pub data: Vec<u8>,
}

/// What became of the images the client made.
#[derive(Clone, Debug, Default)]
pub struct GlanceLoadOutcome {
    /// Image id → what was uploaded into it (acknowledged with 204).
    pub uploaded: BTreeMap<String, UploadedImage>,
    /// Uploaded images that, read back once the load stopped, were not
    /// `active` or did not hold the uploaded bytes, with what was found.
    pub damaged_after: Vec<String>,
}

impl Outcome for GlanceLoadOutcome {
    fn made(&self) -> Made {
        Made {
            summary: format!("{} images uploaded", self.uploaded.len()),
            lost: self.damaged_after.clone(),
        }
    }
}

/// Options of the load.
#[derive(Clone, Debug)]
pub struct GlanceLoadOptions {
    pub pause: Duration,
    /// Whom to log in to Keystone as, when Glance authenticates; none: no
    /// token is sent (a Glance without `spec.identity`).
    pub login: Option<Credentials>,
}

impl Default for GlanceLoadOptions {
    fn default() -> Self {
        GlanceLoadOptions {
            pause: Duration::from_millis(200),
            login: None,
        }
    }
}

/// The running client; stopping it ends the rounds and reads every image back.
pub type GlanceLoad = RunningLoad<GlanceLoadOutcome>;

/// Starts the client in `netns` against the Service `service` (port `api`).
pub async fn start(
    client: &kube::Client,
    netns: &ClientNetns,
    namespace: &str,
    service: &str,
    options: GlanceLoadOptions,
) -> Result<GlanceLoad> {
    start_load(
        client,
        netns,
        namespace,
        service,
        options.login.clone(),
        |session, stop| {
            Worker {
                session,
                outcome: GlanceLoadOutcome::default(),
            }
            .run(options, stop)
        },
    )
    .await
}

/// A few KiB that differ from image to image, so a mix-up shows.
fn image_data(round: u64) -> Vec<u8> {
    let size = 1024 + (round as usize * 397) % 7168;
    (0..size)
        .map(|i| (i as u64).wrapping_mul(31).wrapping_add(round) as u8)
        .collect()
}

struct Worker {
    session: Session,
    outcome: GlanceLoadOutcome,
}

/// What a request sends.
enum Body {
    None,
    Json(Value),
    Bytes(Vec<u8>),
}

impl Worker {
    /// One tallied request to `/v2<path>`: the body as JSON, if it answered
    /// `expect`.
    async fn call(&self, method: Method, path: &str, body: Body, expect: u16) -> Option<Value> {
        self.session
            .tallied(async {
                let Request { builder, what } = self.session.request(method, "/v2", path).await?;
                let request = match body {
                    Body::None => builder,
                    Body::Json(value) => builder.json(&value),
                    Body::Bytes(bytes) => builder
                        .header("Content-Type", "application/octet-stream")
                        .body(bytes),
                };
                exchange(request, &what, expect).await
            })
            .await
    }

    /// Downloads image `id`: its bytes, or why not (tallied).
    async fn download(&self, id: &str) -> Option<Vec<u8>> {
        self.session
            .tallied(async {
                let path = format!("/images/{id}/file");
                let Request { builder, what } =
                    self.session.request(Method::GET, "/v2", &path).await?;
                let response = builder
                    .send()
                    .await
                    .map_err(|e| transport_failure(&what, &e))?;
                let status = response.status().as_u16();
                let bytes = response
                    .bytes()
                    .await
                    .map_err(|e| format!("{what}: reading the body: {e}"))?;
                match status {
                    200 => Ok(bytes.to_vec()),
                    _ => Err(format!("{what}: {status}")),
                }
            })
            .await
    }

    async fn upload(&mut self, round: u64) {
        let record = json!({
            "name": format!("load-{round}"),
            "disk_format": "raw",
            "container_format": "bare",
        });
        let Some(created) = self
            .call(Method::POST, "/images", Body::Json(record), 201)
            .await
        else {
            return;
        };
        let Some(id) = created["id"].as_str().map(str::to_string) else {
            return;
        };
        let data = image_data(round);
        let path = format!("/images/{id}/file");
        if self
            .call(Method::PUT, &path, Body::Bytes(data.clone()), 204)
            .await
            .is_some()
        {
            let at = SystemTime::now();
            self.outcome.uploaded.insert(id, UploadedImage { at, data });
        }
    }

    /// Downloads one image uploaded earlier; different bytes are a failure.
    async fn check_one(&self, round: u64) {
        let ids: Vec<&String> = self.outcome.uploaded.keys().collect();
        if ids.is_empty() {
            return;
        }
        let id = ids[round as usize % ids.len()];
        if let Some(bytes) = self.download(id).await
            && bytes != self.outcome.uploaded[id].data
        {
            self.session.fail_last(format!(
                "GET /images/{id}/file: {} bytes, not the {} uploaded",
                bytes.len(),
                self.outcome.uploaded[id].data.len()
            ));
        }
    }

    async fn run(
        mut self,
        options: GlanceLoadOptions,
        mut stop: watch::Receiver<Option<Duration>>,
    ) -> GlanceLoadOutcome {
        let mut round = 1;
        while stop.borrow().is_none() {
            self.upload(round).await;
            self.call(Method::GET, "/images?limit=20", Body::None, 200)
                .await;
            self.check_one(round).await;
            round += 1;
            tokio::select! {
                _ = tokio::time::sleep(options.pause) => {}
                _ = stop.changed() => {}
            }
        }
        for (id, uploaded) in self.outcome.uploaded.clone() {
            let record = self
                .call(Method::GET, &format!("/images/{id}"), Body::None, 200)
                .await;
            let status = record
                .as_ref()
                .and_then(|r| r["status"].as_str())
                .unwrap_or("unreadable")
                .to_string();
            let bytes = self.download(&id).await;
            if status != "active" || bytes.as_ref() != Some(&uploaded.data) {
                self.outcome.damaged_after.push(format!(
                    "{id} (uploaded at {:?}): status {status}, {} bytes read of {}",
                    uploaded.at,
                    bytes.map_or(0, |b| b.len()),
                    uploaded.data.len()
                ));
            }
        }
        self.outcome
    }
}
