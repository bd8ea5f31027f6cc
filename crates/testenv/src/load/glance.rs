//! A client that keeps using a Glance API while it upgrades: every round it
//! creates an image record, uploads a small image into it, lists images and
//! downloads one uploaded earlier, comparing every byte with what it sent,
//! through the API Service's ClusterIP, from a client network namespace.
//! Beside the rounds, slow uploaders (when asked for) each keep one large
//! image streaming in for seconds, so uploads are in flight whenever an API
//! pod stops: a pod that stopped mid-upload fails one. Once stopped the
//! client downloads every image it uploaded. Any transport error,
//! unexpected status or changed byte is a failure; nothing is retried to hide
//! one. Given credentials, it logs in to Keystone and sends its token
//! ([`super::auth`]); otherwise Glance must serve without authentication.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::StreamExt;

use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::auth::Credentials;
use super::{
    Made, Outcome, Request, RunningLoad, Session, exchange, start_load, transport_failure,
};
use crate::error::Result;
use crate::shared::ClientNetns;

/// An image the client uploaded: when its upload started and ended, and
/// what it holds (regenerated from its seed and size, so the client keeps no
/// copy of large images).
#[derive(Clone, Debug)]
pub struct UploadedImage {
    pub started: SystemTime,
    pub at: SystemTime,
    pub seed: u64,
    pub size: usize,
}

impl UploadedImage {
    pub fn data(&self) -> Vec<u8> {
        image_data(self.seed, self.size)
    }
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

/// Uploaders that each stream one large image at a time, slowly.
#[derive(Clone, Copy, Debug)]
pub struct SlowUploads {
    pub uploaders: u64,
    /// Bytes per image.
    pub size: usize,
    /// How long each upload takes: its bytes are sent in chunks spread over it.
    pub duration: Duration,
}

impl Default for SlowUploads {
    /// One upload in flight, 2 MiB over 30 s: far longer than an API pod's
    /// stop takes to begin (endpoint drain, then SIGTERM), so one is most
    /// likely running when a pod gets SIGTERM, on that pod about every other
    /// time. One, not
    /// more: each holds one of a pod's two uWSGI workers for its whole
    /// length, and a request queued behind two of them on a stopping pod is
    /// reset when that pod's socket closes (seen with three).
    fn default() -> Self {
        SlowUploads {
            uploaders: 1,
            size: 2 << 20,
            duration: Duration::from_secs(30),
        }
    }
}

/// Chunks of a slow upload.
const SLOW_CHUNKS: usize = 48;

/// Options of the load.
#[derive(Clone, Debug)]
pub struct GlanceLoadOptions {
    pub pause: Duration,
    /// Slow uploaders beside the rounds; none: only the rounds' small images.
    pub slow_uploads: Option<SlowUploads>,
    /// Whom to log in to Keystone as, when Glance authenticates; none: no
    /// token is sent (a Glance without `spec.identity`).
    pub login: Option<Credentials>,
}

impl Default for GlanceLoadOptions {
    fn default() -> Self {
        GlanceLoadOptions {
            pause: Duration::from_millis(200),
            slow_uploads: None,
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
                session: Arc::new(session),
                outcome: GlanceLoadOutcome::default(),
            }
            .run(options, stop)
        },
    )
    .await
}

/// `size` bytes that differ from seed to seed, so a mix-up shows.
fn image_data(seed: u64, size: usize) -> Vec<u8> {
    let mixed = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..size)
        .map(|i| (mixed.rotate_left(i as u32 % 64) as u8).wrapping_add((i as u8).wrapping_mul(31)))
        .collect()
}

/// A round's small image: a few KiB.
fn round_size(round: u64) -> usize {
    1024 + (round as usize * 397) % 7168
}

struct Worker {
    session: Arc<Session>,
    outcome: GlanceLoadOutcome,
}

/// What a request sends.
enum Body {
    None,
    Json(Value),
    Bytes(Vec<u8>),
    /// Bytes sent in chunks spread over a duration (with their length, so
    /// the upload is not chunk-encoded).
    Slow(Vec<u8>, Duration),
}

impl Body {
    fn on(self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self {
            Body::None => builder,
            Body::Json(value) => builder.json(&value),
            Body::Bytes(bytes) => builder
                .header("Content-Type", "application/octet-stream")
                .body(bytes),
            Body::Slow(bytes, duration) => {
                let length = bytes.len();
                let pause = duration / SLOW_CHUNKS as u32;
                let chunks: Vec<Vec<u8>> = bytes
                    .chunks(length.div_ceil(SLOW_CHUNKS).max(1))
                    .map(<[u8]>::to_vec)
                    .collect();
                let stream = futures::stream::iter(chunks).then(move |chunk| async move {
                    tokio::time::sleep(pause).await;
                    Ok::<_, std::io::Error>(chunk)
                });
                builder
                    .header("Content-Type", "application/octet-stream")
                    .header("Content-Length", length)
                    .body(reqwest::Body::wrap_stream(stream))
            }
        }
    }
}

impl Worker {
    /// One tallied request to `/v2<path>`: the body as JSON, if it answered
    /// `expect`.
    async fn call(&self, method: Method, path: &str, body: Body, expect: u16) -> Option<Value> {
        call(&self.session, method, path, body, expect).await
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
        let size = round_size(round);
        if let Some((id, image)) = upload(&self.session, round, size, None).await {
            self.outcome.uploaded.insert(id, image);
        }
    }

    /// Downloads one image uploaded earlier; different bytes are a failure.
    async fn check_one(&self, round: u64) {
        let ids: Vec<&String> = self.outcome.uploaded.keys().collect();
        if ids.is_empty() {
            return;
        }
        let id = ids[round as usize % ids.len()];
        let uploaded = &self.outcome.uploaded[id];
        if let Some(bytes) = self.download(id).await
            && bytes != uploaded.data()
        {
            self.session.fail_last(format!(
                "GET /images/{id}/file: {} bytes, not the {} uploaded",
                bytes.len(),
                uploaded.size
            ));
        }
    }

    async fn run(
        mut self,
        options: GlanceLoadOptions,
        stop: watch::Receiver<Option<Duration>>,
    ) -> GlanceLoadOutcome {
        let slow = options.slow_uploads.map(|slow| {
            (0..slow.uploaders)
                .map(|uploader| {
                    let session = self.session.clone();
                    tokio::spawn(slow_uploads(session, slow, uploader, stop.clone()))
                })
                .collect::<Vec<_>>()
        });
        self.rounds(options, stop).await;
        for uploader in slow.into_iter().flatten() {
            // A panicked uploader's images are simply not checked; its
            // requests are tallied already.
            if let Ok(images) = uploader.await {
                self.outcome.uploaded.extend(images);
            }
        }
        self.read_back().await;
        self.outcome
    }

    async fn rounds(
        &mut self,
        options: GlanceLoadOptions,
        mut stop: watch::Receiver<Option<Duration>>,
    ) {
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
    }

    /// Reads every uploaded image back once the load stopped.
    async fn read_back(&mut self) {
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
            if status != "active" || bytes.as_ref() != Some(&uploaded.data()) {
                self.outcome.damaged_after.push(format!(
                    "{id} (uploaded at {:?}): status {status}, {} bytes read of {}",
                    uploaded.at,
                    bytes.map_or(0, |b| b.len()),
                    uploaded.size
                ));
            }
        }
    }
}

/// One tallied request to `/v2<path>`: the body as JSON, if it answered `expect`.
async fn call(
    session: &Session,
    method: Method,
    path: &str,
    body: Body,
    expect: u16,
) -> Option<Value> {
    session
        .tallied(async {
            let Request { builder, what } = session.request(method, "/v2", path).await?;
            exchange(body.on(builder), &what, expect).await
        })
        .await
}

/// Creates an image record and uploads `size` bytes of `seed`'s data into it
/// (over `slowly`, if given): the image, once acknowledged.
async fn upload(
    session: &Session,
    seed: u64,
    size: usize,
    slowly: Option<Duration>,
) -> Option<(String, UploadedImage)> {
    let record = json!({
        "name": format!("load-{seed}"),
        "disk_format": "raw",
        "container_format": "bare",
    });
    let created = call(session, Method::POST, "/images", Body::Json(record), 201).await?;
    let id = created["id"].as_str()?.to_string();
    let data = image_data(seed, size);
    let body = match slowly {
        Some(duration) => Body::Slow(data, duration),
        None => Body::Bytes(data),
    };
    let started = SystemTime::now();
    let path = format!("/images/{id}/file");
    call(session, Method::PUT, &path, body, 204).await?;
    let at = SystemTime::now();
    Some((
        id,
        UploadedImage {
            started,
            at,
            seed,
            size,
        },
    ))
}

/// One slow uploader: large images one after another until stopped. Seeds
/// start far above the rounds' and differ between uploaders.
async fn slow_uploads(
    session: Arc<Session>,
    slow: SlowUploads,
    uploader: u64,
    mut stop: watch::Receiver<Option<Duration>>,
) -> BTreeMap<String, UploadedImage> {
    let mut uploaded = BTreeMap::new();
    let mut seed = (uploader + 1) << 32;
    while stop.borrow().is_none() {
        let upload = upload(&session, seed, slow.size, Some(slow.duration));
        if let Some((id, image)) = upload.await {
            uploaded.insert(id, image);
        }
        seed += 1;
        // A failed upload is tallied; the next one waits a moment so a
        // refusing API is not hammered.
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            _ = stop.changed() => {}
        }
    }
    uploaded
}
