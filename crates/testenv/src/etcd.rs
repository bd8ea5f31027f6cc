//! Raw reads from etcd through its JSON gateway (`/v3/kv/range`).
//!
//! Only etcd tells which API version an object is really stored in: through the
//! API server you always get the version you ask for. Tests and the storage
//! report read `/registry/<group>/<plural>/<namespace>/<name>` here.
//!
//! Plain HTTP, or TLS with a client certificate as production etcd wants it
//! (the API server's etcd client identity, e.g. kubeadm's
//! `apiserver-etcd-client.crt`).

use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Deserialize;

use crate::error::{Result, TestEnvError};

/// PEM: the CA that signed etcd's serving certificate, and a client identity
/// etcd trusts.
#[derive(Clone, Debug)]
pub struct EtcdTls {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl EtcdTls {
    pub fn from_files(ca: &Path, cert: &Path, key: &Path) -> Result<EtcdTls> {
        let read = |p: &Path| {
            std::fs::read_to_string(p)
                .map_err(|e| TestEnvError::Etcd(format!("reading {}: {e}", p.display())))
        };
        Ok(EtcdTls {
            ca_pem: read(ca)?,
            cert_pem: read(cert)?,
            key_pem: read(key)?,
        })
    }

    fn client_config(&self) -> Result<rustls::ClientConfig> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let tls_error = |what: &str, e: &dyn std::fmt::Display| {
            TestEnvError::Etcd(format!("etcd TLS: {what}: {e}"))
        };
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(self.ca_pem.as_bytes()) {
            let cert = cert.map_err(|e| tls_error("the CA", &e))?;
            roots.add(cert).map_err(|e| tls_error("the CA", &e))?;
        }
        let chain = CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| tls_error("the client certificate", &e))?;
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| tls_error("the client key", &e))?;
        tls_builder()?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .map_err(|e| tls_error("the client identity", &e))
    }
}

fn tls_builder() -> Result<rustls::ConfigBuilder<rustls::ClientConfig, rustls::WantsVerifier>> {
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| TestEnvError::Etcd(format!("etcd TLS: protocol versions: {e}")))
}

#[derive(Clone, Debug)]
pub struct EtcdClient {
    base_url: String,
    http: reqwest::Client,
}

/// One key and its stored bytes.
#[derive(Clone, Debug)]
pub struct StoredObject {
    pub key: String,
    pub value: Vec<u8>,
}

impl StoredObject {
    /// The `apiVersion` of an object stored as JSON (custom resources always are);
    /// `None` for protobuf-encoded built-in objects.
    pub fn json_api_version(&self) -> Option<String> {
        let value: serde_json::Value = serde_json::from_slice(&self.value).ok()?;
        value.get("apiVersion")?.as_str().map(str::to_owned)
    }
}

#[derive(Deserialize)]
struct RangeResponse {
    #[serde(default)]
    header: Header,
    #[serde(default)]
    kvs: Vec<RangeKv>,
    #[serde(default)]
    more: bool,
}

#[derive(Default, Deserialize)]
struct Header {
    /// int64 in the JSON gateway's encoding: a string.
    #[serde(default)]
    revision: String,
}

#[derive(Deserialize)]
struct RangeKv {
    key: String,
    #[serde(default)]
    value: String,
}

const PAGE: usize = 500;

impl EtcdClient {
    /// A client for an etcd that answers plain HTTP.
    pub fn new(base_url: impl Into<String>) -> Result<Self> {
        // No process-wide TLS provider is assumed: even a plain client gets
        // its (unused) TLS configuration handed in.
        let tls = tls_builder()?
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        Self::build(base_url, tls)
    }

    /// A client for an etcd that serves TLS and asks for a client certificate.
    pub fn with_tls(base_url: impl Into<String>, tls: &EtcdTls) -> Result<Self> {
        Self::build(base_url, tls.client_config()?)
    }

    fn build(base_url: impl Into<String>, tls: rustls::ClientConfig) -> Result<Self> {
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .build()
            .map_err(|e| TestEnvError::Etcd(format!("etcd client: {e}")))?;
        Ok(EtcdClient {
            base_url: base_url.into(),
            http,
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// True when etcd answers its health endpoint with `"health":"true"`.
    pub async fn healthy(&self) -> bool {
        match self
            .http
            .get(format!("{}/health", self.base_url))
            .send()
            .await
        {
            Ok(resp) => resp
                .text()
                .await
                .map(|body| body.contains("\"health\":\"true\""))
                .unwrap_or(false),
            Err(_) => false,
        }
    }

    pub async fn get(&self, key: &str) -> Result<Option<StoredObject>> {
        let body = serde_json::json!({ "key": B64.encode(key) });
        let resp = self.range(body).await?;
        resp.kvs.into_iter().next().map(decode).transpose()
    }

    /// Every key under `prefix`, read in pages so a large prefix never becomes
    /// one huge response.
    pub async fn list_prefix(&self, prefix: &str) -> Result<Vec<StoredObject>> {
        let range_end = prefix_end(prefix.as_bytes());
        let mut start = prefix.as_bytes().to_vec();
        let mut out = Vec::new();
        loop {
            let body = serde_json::json!({
                "key": B64.encode(&start),
                "range_end": B64.encode(&range_end),
                "limit": PAGE,
            });
            let resp = self.range(body).await?;
            let more = resp.more;
            for kv in resp.kvs {
                out.push(decode(kv)?);
            }
            match out.last() {
                Some(last) if more => {
                    start = last.key.as_bytes().to_vec();
                    start.push(0);
                }
                _ => return Ok(out),
            }
        }
    }

    /// Compacts etcd's history, as the API server does periodically: every
    /// list continue token issued before this call expires (410). A scratch
    /// key is written first, so the compacted revision is newer than any
    /// revision a token names even when nothing else was written since (a
    /// no-op update does not reach etcd); compacting at a token's own revision
    /// would leave it readable.
    pub async fn compact(&self) -> Result<i64> {
        self.post(
            "put",
            serde_json::json!({
                "key": B64.encode("/ratchet-testenv/compaction"),
                "value": B64.encode("tick"),
            }),
        )
        .await?;
        let resp = self
            .range(serde_json::json!({ "key": B64.encode("/"), "limit": 1 }))
            .await?;
        let revision: i64 = resp.header.revision.parse().map_err(|e| {
            TestEnvError::Etcd(format!("bad revision {:?}: {e}", resp.header.revision))
        })?;
        self.post(
            "compaction",
            serde_json::json!({ "revision": revision.to_string(), "physical": true }),
        )
        .await?;
        Ok(revision)
    }

    /// A successful response of the JSON gateway's `/v3/kv/<call>`.
    async fn post(&self, call: &str, body: serde_json::Value) -> Result<reqwest::Response> {
        let resp = self
            .http
            .post(format!("{}/v3/kv/{call}", self.base_url))
            .json(&body)
            .send()
            .await
            .map_err(|e| TestEnvError::Etcd(e.to_string()))?;
        if !resp.status().is_success() {
            return Err(TestEnvError::Etcd(format!(
                "{call} returned {}",
                resp.status()
            )));
        }
        Ok(resp)
    }

    async fn range(&self, body: serde_json::Value) -> Result<RangeResponse> {
        let resp = self.post("range", body).await?;
        resp.json::<RangeResponse>()
            .await
            .map_err(|e| TestEnvError::Etcd(e.to_string()))
    }
}

fn decode(kv: RangeKv) -> Result<StoredObject> {
    let key = B64
        .decode(kv.key)
        .map_err(|e| TestEnvError::Etcd(format!("bad key encoding: {e}")))?;
    let value = B64
        .decode(kv.value)
        .map_err(|e| TestEnvError::Etcd(format!("bad value encoding: {e}")))?;
    Ok(StoredObject {
        key: String::from_utf8_lossy(&key).into_owned(),
        value,
    })
}

/// The smallest key greater than every key with this prefix (etcd's range_end).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_increments_last_byte() {
        assert_eq!(prefix_end(b"/registry/a/"), b"/registry/a0".to_vec());
        assert_eq!(prefix_end(&[0x61, 0xff]), vec![0x62]);
        assert_eq!(prefix_end(&[0xff]), vec![0]);
    }
}
