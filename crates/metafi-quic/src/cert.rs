//! Certificates and TLS settings (`docs/TRANSPORT.md`, "Certificates").
//!
//! The server presents either the operator's certificate (PEM files) or a self-signed ECDSA
//! P-256 certificate generated on first start and kept in the data directory: small (a few
//! hundred bytes, so a handshake fits thin links) and stable across restarts, so clients can pin
//! its SHA-256 [`Fingerprint`]. Clients trust either a pinned fingerprint or a CA.
//!
//! Both sides enable what makes reconnecting cheap: the server keeps a bounded cache of TLS
//! sessions and accepts 0-RTT data with single-use tickets; the client keeps its tickets in its
//! connector's session cache.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms, ring};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::Tuning;
use crate::wire::ALPN;

/// Why certificates or TLS settings could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} holds no PEM {what}")]
    Pem { path: PathBuf, what: &'static str },
    #[error("cannot generate a self-signed certificate")]
    Generate {
        #[source]
        source: rcgen::Error,
    },
    #[error("TLS settings refused")]
    Tls {
        #[source]
        source: rustls::Error,
    },
    #[error("TLS settings are not usable for QUIC")]
    Quic {
        #[source]
        source: quinn::crypto::rustls::NoInitialCipherSuite,
    },
}

/// The SHA-256 digest of a certificate's DER bytes. Text form: 64 hex digits, colons allowed.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    pub fn of(cert: &CertificateDer<'_>) -> Fingerprint {
        let digest = ::ring::digest::digest(&::ring::digest::SHA256, cert.as_ref());
        let mut out = [0; 32];
        out.copy_from_slice(digest.as_ref());
        Fingerprint(out)
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// The text is not 32 hex bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a SHA-256 fingerprint is 64 hex digits (colons allowed)")]
pub struct BadFingerprint;

impl FromStr for Fingerprint {
    type Err = BadFingerprint;

    fn from_str(text: &str) -> Result<Fingerprint, BadFingerprint> {
        let digits: Vec<u8> = text.bytes().filter(|b| *b != b':').collect();
        if digits.len() != 64 {
            return Err(BadFingerprint);
        }
        let mut out = [0; 32];
        for (slot, pair) in out.iter_mut().zip(digits.chunks(2)) {
            let text = std::str::from_utf8(pair).map_err(|_| BadFingerprint)?;
            *slot = u8::from_str_radix(text, 16).map_err(|_| BadFingerprint)?;
        }
        Ok(Fingerprint(out))
    }
}

/// A certificate chain and its key, ready to serve.
#[derive(Debug)]
pub struct ServerCert {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    /// Of the first certificate of the chain.
    pub fingerprint: Fingerprint,
    /// Whether it was generated just now (first start).
    pub generated: bool,
}

impl ServerCert {
    /// The operator's certificate chain and key, PEM files.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<ServerCert, CertError> {
        let cert_pem = read(cert)?;
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
            .filter_map(Result::ok)
            .collect();
        if chain.is_empty() {
            return Err(CertError::Pem {
                path: cert.to_owned(),
                what: "certificate",
            });
        }
        let key_pem = read(key)?;
        let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| CertError::Pem {
            path: key.to_owned(),
            what: "private key",
        })?;
        Ok(ServerCert {
            fingerprint: Fingerprint::of(&chain[0]),
            chain,
            key,
            generated: false,
        })
    }

    /// The self-signed certificate kept in `dir` (`cert.pem`, `key.pem`), generated there on
    /// first use for `names` (DNS names or IP addresses). `fingerprint.txt` beside them holds
    /// the fingerprint for scripts and clients to pin.
    pub fn load_or_generate(dir: &Path, names: &[String]) -> Result<ServerCert, CertError> {
        let cert_path = dir.join("cert.pem");
        let key_path = dir.join("key.pem");
        if cert_path.exists() && key_path.exists() {
            let cert = ServerCert::from_pem_files(&cert_path, &key_path)?;
            write_fingerprint(dir, cert.fingerprint)?;
            return Ok(cert);
        }
        let generated = generate(names)?;
        fs::create_dir_all(dir).map_err(|source| CertError::Write {
            path: dir.to_owned(),
            source,
        })?;
        write_private(&key_path, generated.signing_key.serialize_pem().as_bytes())?;
        write(&cert_path, generated.cert.pem().as_bytes())?;
        let chain = vec![generated.cert.der().clone()];
        let fingerprint = Fingerprint::of(&chain[0]);
        write_fingerprint(dir, fingerprint)?;
        Ok(ServerCert {
            chain,
            key: PrivateKeyDer::try_from(generated.signing_key.serialize_der()).map_err(|_| {
                CertError::Pem {
                    path: key_path,
                    what: "private key",
                }
            })?,
            fingerprint,
            generated: true,
        })
    }

    /// A fresh self-signed certificate held in memory only (tests, tools).
    pub fn ephemeral(names: &[String]) -> Result<ServerCert, CertError> {
        let generated = generate(names)?;
        let chain = vec![generated.cert.der().clone()];
        Ok(ServerCert {
            fingerprint: Fingerprint::of(&chain[0]),
            chain,
            key: PrivateKeyDer::try_from(generated.signing_key.serialize_der()).map_err(|_| {
                CertError::Pem {
                    path: PathBuf::new(),
                    what: "private key",
                }
            })?,
            generated: true,
        })
    }

    /// Size of the certificate chain the server sends in a full handshake.
    pub fn chain_bytes(&self) -> usize {
        self.chain.iter().map(|c| c.len()).sum()
    }

    /// The quinn server settings: TLS 1.3, ALPN `metafi/1`, resumption from a cache of
    /// `session_cache` sessions with 0-RTT, `tuning`.
    pub fn server_config(
        &self,
        tuning: &Tuning,
        session_cache: usize,
    ) -> Result<quinn::ServerConfig, CertError> {
        let mut tls = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|source| CertError::Tls { source })?
            .with_no_client_auth()
            .with_single_cert(self.chain.clone(), self.key.clone_key())
            .map_err(|source| CertError::Tls { source })?;
        tls.alpn_protocols = vec![ALPN.to_vec()];
        // Stateful resumption: rustls allows 0-RTT only with it, because a ticket that can be
        // used once cannot be replayed. The cache is bounded (oldest sessions are forgotten).
        tls.session_storage = rustls::server::ServerSessionMemoryCache::new(session_cache.max(1));
        tls.send_tls13_tickets = 1;
        // QUIC allows only 0 or u32::MAX here; MAX enables 0-RTT.
        tls.max_early_data_size = u32::MAX;
        let crypto =
            QuicServerConfig::try_from(tls).map_err(|source| CertError::Quic { source })?;
        let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        config.transport_config(tuning.transport_config());
        Ok(config)
    }
}

/// What a client trusts.
#[derive(Debug, Clone)]
pub enum Trust {
    /// Exactly the certificate with this SHA-256 fingerprint (names and dates are not checked:
    /// the pin is the identity).
    Fingerprint(Fingerprint),
    /// Certificates issued by these CAs (PEM), checked for the server name as usual.
    CaPem(Vec<u8>),
}

/// The quinn client settings for `trust`: TLS 1.3, ALPN `metafi/1`, resumption and 0-RTT.
pub fn client_config(trust: &Trust, tuning: &Tuning) -> Result<quinn::ClientConfig, CertError> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|source| CertError::Tls { source })?;
    let mut tls = match trust {
        Trust::Fingerprint(fingerprint) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(PinnedVerifier {
                fingerprint: *fingerprint,
                algorithms: provider().signature_verification_algorithms,
            }))
            .with_no_client_auth(),
        Trust::CaPem(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(pem).filter_map(Result::ok) {
                roots
                    .add(cert)
                    .map_err(|source| CertError::Tls { source })?;
            }
            if roots.is_empty() {
                return Err(CertError::Pem {
                    path: PathBuf::from("<CA PEM>"),
                    what: "certificate",
                });
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.enable_early_data = true;
    let crypto = QuicClientConfig::try_from(tls).map_err(|source| CertError::Quic { source })?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(tuning.transport_config());
    Ok(config)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

/// Accepts exactly one certificate, by fingerprint; signatures are still verified, so only
/// the holder of its key passes.
#[derive(Debug)]
struct PinnedVerifier {
    fingerprint: Fingerprint,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if Fingerprint::of(end_entity) == self.fingerprint {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // Only TLS 1.3 is enabled.
        Err(rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::Tls12NotOffered,
        ))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

fn generate(names: &[String]) -> Result<rcgen::CertifiedKey<rcgen::KeyPair>, CertError> {
    let mut params = rcgen::CertificateParams::new(names.to_vec())
        .map_err(|source| CertError::Generate { source })?;
    let mut name = rcgen::DistinguishedName::new();
    name.push(rcgen::DnType::CommonName, "metafi");
    params.distinguished_name = name;
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
        .map_err(|source| CertError::Generate { source })?;
    let cert = params
        .self_signed(&key)
        .map_err(|source| CertError::Generate { source })?;
    Ok(rcgen::CertifiedKey {
        cert,
        signing_key: key,
    })
}

fn read(path: &Path) -> Result<Vec<u8>, CertError> {
    fs::read(path).map_err(|source| CertError::Read {
        path: path.to_owned(),
        source,
    })
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), CertError> {
    fs::write(path, bytes).map_err(|source| CertError::Write {
        path: path.to_owned(),
        source,
    })
}

/// Writes a private key readable by its owner only.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), CertError> {
    use std::io::Write;
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|source| CertError::Write {
            path: path.to_owned(),
            source,
        })
}

fn write_fingerprint(dir: &Path, fingerprint: Fingerprint) -> Result<(), CertError> {
    write(
        &dir.join("fingerprint.txt"),
        format!("{fingerprint}\n").as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_parse_with_or_without_colons() {
        let text = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let fingerprint: Fingerprint = text.parse().unwrap();
        assert_eq!(fingerprint.to_string(), text);
        let colons = text
            .as_bytes()
            .chunks(2)
            .map(|c| std::str::from_utf8(c).unwrap().to_uppercase())
            .collect::<Vec<_>>()
            .join(":");
        assert_eq!(colons.parse::<Fingerprint>(), Ok(fingerprint));
        assert_eq!("abc".parse::<Fingerprint>(), Err(BadFingerprint));
        assert_eq!(
            text.replace('0', "g").parse::<Fingerprint>(),
            Err(BadFingerprint)
        );
    }

    #[test]
    fn a_generated_certificate_is_small_kept_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let names = vec!["localhost".to_owned()];
        let first = ServerCert::load_or_generate(dir.path(), &names).unwrap();
        assert!(first.generated);
        assert!(first.chain_bytes() < 600, "{} bytes", first.chain_bytes());
        let again = ServerCert::load_or_generate(dir.path(), &names).unwrap();
        assert!(!again.generated);
        assert_eq!(again.fingerprint, first.fingerprint);
        let written = fs::read_to_string(dir.path().join("fingerprint.txt")).unwrap();
        assert_eq!(written.trim(), first.fingerprint.to_string());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dir.path().join("key.pem"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "the key is private: {mode:o}");
        }
    }
}
