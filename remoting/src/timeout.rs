//! A deadline on a remoting future.

use std::time::Duration;

use crate::error::RemotingError;

/// Runs `fut`, or fails with `RemotingError::Timeout` after `limit`.
pub async fn with_timeout<T>(
    limit: Duration,
    fut: impl std::future::Future<Output = Result<T, RemotingError>>,
) -> Result<T, RemotingError> {
    use futures_lite::FutureExt;
    fut.or(async {
        glommio::timer::sleep(limit).await;
        Err(RemotingError::Timeout(limit))
    })
    .await
}
