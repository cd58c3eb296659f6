//! Small I/O helpers shared by both ends: exact reads and writes bounded in time.

use std::time::Duration;

use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::error::HaError;

/// Reads exactly `buf.len()` bytes, or fails after `limit`.
pub async fn read_exact_within<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut [u8],
    limit: Duration,
) -> Result<(), HaError> {
    let read = async { r.read_exact(buf).await.map_err(HaError::from) };
    let timer = async {
        glommio::timer::sleep(limit).await;
        Err(HaError::Timeout(limit))
    };
    futures_lite::future::or(read, timer).await
}

/// Writes all of `buf` (and flushes), or fails after `limit`.
pub async fn write_all_within<W: AsyncWrite + Unpin>(
    w: &mut W,
    buf: &[u8],
    limit: Duration,
) -> Result<(), HaError> {
    let write = async {
        w.write_all(buf).await?;
        w.flush().await?;
        Ok(())
    };
    let timer = async {
        glommio::timer::sleep(limit).await;
        Err(HaError::Timeout(limit))
    };
    futures_lite::future::or(write, timer).await
}
