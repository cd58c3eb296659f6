//! Certificates and keys for TLS: PEM files (the operator's) or a self-signed certificate made at
//! start (Apache's test mode).

use std::sync::Arc;

use futures_rustls::rustls::pki_types::pem::PemObject;
use futures_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use futures_rustls::rustls::RootCertStore;

/// A certificate chain and its private key.
pub type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// A self-signed certificate for `localhost` and 127.0.0.1, as Apache's test mode makes one.
pub fn self_signed() -> Result<Identity, String> {
    let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    let made = rcgen::generate_simple_self_signed(names)
        .map_err(|e| format!("cannot make a self-signed certificate: {e}"))?;
    let key = PrivatePkcs8KeyDer::from(made.key_pair.serialize_der());
    Ok((vec![made.cert.der().clone()], PrivateKeyDer::Pkcs8(key)))
}

/// The certificates of a PEM file (`what` names the key that gave the path, for errors).
pub fn certificates(what: &str, path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let chain = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{what} {path}: {e}"))?;
    if chain.is_empty() {
        return Err(format!("{what} {path}: no certificate in it"));
    }
    Ok(chain)
}

/// The private key of a PEM file: PKCS#8 (Apache's format), PKCS#1 or SEC1. An encrypted key is
/// refused with what to do, not taken for a missing one.
pub fn private_key(what: &str, path: &str) -> Result<PrivateKeyDer<'static>, String> {
    let text = std::fs::read(path).map_err(|e| format!("{what} {path}: {e}"))?;
    if text.windows(9).any(|w| w == b"ENCRYPTED") {
        return Err(format!(
            "{what} {path}: the key is encrypted, which is not supported here; decrypt it \
             (`openssl pkcs8 -topk8 -nocrypt -in {path} -out key.pem`) and point {what} at that"
        ));
    }
    PrivateKeyDer::from_pem_slice(&text).map_err(|e| format!("{what} {path}: no private key: {e}"))
}

/// A certificate and key from two PEM files.
pub fn identity(
    cert_key: &str,
    cert_path: &str,
    key_key: &str,
    key_path: &str,
) -> Result<Identity, String> {
    Ok((
        certificates(cert_key, cert_path)?,
        private_key(key_key, key_path)?,
    ))
}

/// The trusted roots of a PEM file of CA certificates.
pub fn roots(what: &str, path: &str) -> Result<Arc<RootCertStore>, String> {
    let mut store = RootCertStore::empty();
    for cert in certificates(what, path)? {
        store
            .add(cert)
            .map_err(|e| format!("{what} {path}: a certificate is not usable as a root: {e}"))?;
    }
    Ok(Arc::new(store))
}
