//! MCP HTTP sessions that end: rmcp's local sessions, each closed after `idle` without a
//! request and at most `cap` of them at once (the least recently used closes first). Most
//! clients never send `DELETE`; without this, every `initialize` (~130 KB) stayed for good.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::SessionManager;

/// How sessions end.
#[derive(Debug, Clone, Copy)]
pub struct Expiry {
    /// Closed after this long without a request.
    pub idle: Duration,
    /// At most this many at once.
    pub cap: usize,
}

/// rmcp's local sessions, with when each was last used.
pub struct ExpiringSessions {
    inner: LocalSessionManager,
    seen: Mutex<HashMap<SessionId, Instant>>,
    expiry: Expiry,
}

type Inner = LocalSessionManager;

impl ExpiringSessions {
    /// Sessions ending as `expiry` says; rmcp's own worker also stops after `idle`.
    pub fn new(expiry: Expiry) -> ExpiringSessions {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(expiry.idle);
        ExpiringSessions {
            inner,
            seen: Mutex::new(HashMap::new()),
            expiry,
        }
    }

    /// Live sessions.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.seen.lock().map(|s| s.len()).unwrap_or(0)
    }

    fn touch(&self, id: &SessionId) {
        if let Ok(mut seen) = self.seen.lock() {
            if let Some(at) = seen.get_mut(id) {
                *at = Instant::now();
            }
        }
    }

    fn forget(&self, id: &SessionId) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.remove(id);
        }
    }

    /// Closes every session idle for longer than the limit.
    pub async fn reap(&self) {
        let now = Instant::now();
        let expired: Vec<SessionId> = match self.seen.lock() {
            Ok(seen) => seen
                .iter()
                .filter(|(_, at)| now.duration_since(**at) > self.expiry.idle)
                .map(|(id, _)| id.clone())
                .collect(),
            Err(_) => Vec::new(),
        };
        for id in expired {
            self.forget(&id);
            let _ = self.inner.close_session(&id).await;
        }
    }

    /// Reaps every quarter of the idle time (at least once a second), for as long as `this`
    /// is held elsewhere.
    pub fn reap_in_background(this: &Arc<ExpiringSessions>) {
        let weak = Arc::downgrade(this);
        let every = (this.expiry.idle / 4).max(Duration::from_secs(1));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(sessions) = weak.upgrade() else {
                    return;
                };
                sessions.reap().await;
            }
        });
    }
}

impl SessionManager for ExpiringSessions {
    type Error = <Inner as SessionManager>::Error;
    type Transport = <Inner as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // At the cap, the least recently used session makes room.
        let oldest = match self.seen.lock() {
            Ok(seen) if seen.len() >= self.expiry.cap => seen
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(id, _)| id.clone()),
            _ => None,
        };
        if let Some(id) = oldest {
            self.forget(&id);
            let _ = self.inner.close_session(&id).await;
        }
        let (id, transport) = self.inner.create_session().await?;
        if let Ok(mut seen) = self.seen.lock() {
            seen.insert(id.clone(), Instant::now());
        }
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        let known = self
            .seen
            .lock()
            .map(|s| s.contains_key(id))
            .unwrap_or(false);
        Ok(known && self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.forget(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    #[test]
    fn the_least_recently_used_session_makes_room_at_the_cap() {
        runtime().block_on(async {
            let sessions = ExpiringSessions::new(Expiry {
                idle: Duration::from_secs(60),
                cap: 2,
            });
            let (first, _t1) = sessions.create_session().await.unwrap();
            let (second, _t2) = sessions.create_session().await.unwrap();
            sessions.touch(&first);
            let (third, _t3) = sessions.create_session().await.unwrap();
            assert_eq!(sessions.len(), 2);
            assert!(sessions.has_session(&first).await.unwrap());
            assert!(!sessions.has_session(&second).await.unwrap());
            assert!(sessions.has_session(&third).await.unwrap());
        });
    }

    #[test]
    fn an_idle_session_is_closed() {
        runtime().block_on(async {
            let sessions = ExpiringSessions::new(Expiry {
                idle: Duration::from_millis(50),
                cap: 10,
            });
            let (id, _t) = sessions.create_session().await.unwrap();
            sessions.reap().await;
            assert!(sessions.has_session(&id).await.unwrap());
            tokio::time::sleep(Duration::from_millis(120)).await;
            sessions.reap().await;
            assert_eq!(sessions.len(), 0);
            assert!(!sessions.has_session(&id).await.unwrap());
        });
    }
}
