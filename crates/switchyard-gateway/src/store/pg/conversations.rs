//! Kept conversations in the shared store: every replica reads and writes the same
//! turns, so a chain of responses or a thread may go on at any replica. One statement a
//! lookup; a turn and its items in one transaction; the expired swept as turns are kept.

use super::shared::SharedStore;
use super::PgError;
use crate::conversations::turn::Row;
use crate::errors::ApiError;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_postgres::types::Type;

/// Turns kept (by this replica) between two sweeps of the expired ones.
const SWEEP_EVERY: u64 = 256;

static KEPT: AtomicU64 = AtomicU64::new(0);

impl SharedStore {
    /// The JSON of a turn, when held and not expired at `now`.
    pub(crate) async fn conversation_get(
        &self,
        kind: &str,
        owner: &str,
        id: &str,
        now: i64,
    ) -> Result<Option<String>, ApiError> {
        let client = self.client("reading a kept conversation").await?;
        let row = client
            .query_typed(
                "SELECT turn FROM kept_conversations
                 WHERE kind = $1 AND owner = $2 AND id = $3 AND expires > $4",
                &[
                    (&kind, Type::TEXT),
                    (&owner, Type::TEXT),
                    (&id, Type::TEXT),
                    (&now, Type::INT8),
                ],
            )
            .await
            .map_err(|e| internal(PgError::of("reading a kept conversation", e)))?;
        Ok(row.first().map(|r| r.get(0)))
    }

    /// The JSON of the response turn holding item `item_id`.
    pub(crate) async fn conversation_item(
        &self,
        owner: &str,
        item_id: &str,
        now: i64,
    ) -> Result<Option<String>, ApiError> {
        let client = self.client("finding a kept item").await?;
        let row = client
            .query_typed(
                "SELECT k.turn FROM kept_conversation_items i
                 JOIN kept_conversations k
                   ON k.kind = 'response' AND k.owner = i.owner AND k.id = i.id
                 WHERE i.owner = $1 AND i.item_id = $2 AND k.expires > $3",
                &[
                    (&owner, Type::TEXT),
                    (&item_id, Type::TEXT),
                    (&now, Type::INT8),
                ],
            )
            .await
            .map_err(|e| internal(PgError::of("finding a kept item", e)))?;
        Ok(row.first().map(|r| r.get(0)))
    }

    /// Keeps a turn (replacing one of the same id) and its items, committed on return.
    pub(crate) async fn conversation_put(&self, row: &Row) -> Result<(), String> {
        let mut client = self
            .client("keeping a conversation turn")
            .await
            .map_err(|e| e.message)?;
        let doing = "keeping a conversation turn";
        let tx = client
            .transaction()
            .await
            .map_err(|e| PgError::of(doing, e).0)?;
        tx.execute(
            "INSERT INTO kept_conversations (kind, owner, id, created, expires, turn)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (kind, owner, id) DO UPDATE
               SET created = EXCLUDED.created, expires = EXCLUDED.expires, turn = EXCLUDED.turn",
            &[
                &row.kind,
                &row.owner,
                &row.id,
                &row.created,
                &row.expires,
                &row.turn,
            ],
        )
        .await
        .map_err(|e| PgError::of(doing, e).0)?;
        if !row.items.is_empty() {
            tx.execute(
                "INSERT INTO kept_conversation_items (owner, item_id, id)
                 SELECT $1, item, $2 FROM unnest($3::text[]) AS item
                 ON CONFLICT (owner, item_id) DO UPDATE SET id = EXCLUDED.id",
                &[&row.owner, &row.id, &row.items],
            )
            .await
            .map_err(|e| PgError::of(doing, e).0)?;
        }
        if KEPT
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(SWEEP_EVERY)
        {
            tx.batch_execute(&format!(
                "DELETE FROM kept_conversation_items i USING kept_conversations k
                   WHERE k.kind = 'response' AND k.owner = i.owner AND k.id = i.id
                     AND k.expires <= {now};
                 DELETE FROM kept_conversations WHERE expires <= {now};",
                now = row.created
            ))
            .await
            .map_err(|e| PgError::of("purging expired conversation turns", e).0)?;
        }
        tx.commit().await.map_err(|e| PgError::of(doing, e).0)
    }

    /// Forgets a turn and its items; whether it was held.
    pub(crate) async fn conversation_delete(
        &self,
        kind: &str,
        owner: &str,
        id: &str,
        now: i64,
    ) -> Result<bool, ApiError> {
        let doing = "deleting a kept conversation";
        let mut client = self.client(doing).await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| internal(PgError::of(doing, e)))?;
        let n = tx
            .execute(
                "DELETE FROM kept_conversations
                 WHERE kind = $1 AND owner = $2 AND id = $3 AND expires > $4",
                &[&kind, &owner, &id, &now],
            )
            .await
            .map_err(|e| internal(PgError::of(doing, e)))?;
        tx.execute(
            "DELETE FROM kept_conversation_items WHERE owner = $1 AND id = $2",
            &[&owner, &id],
        )
        .await
        .map_err(|e| internal(PgError::of(doing, e)))?;
        tx.commit()
            .await
            .map_err(|e| internal(PgError::of(doing, e)))?;
        Ok(n > 0)
    }
}

fn internal(e: PgError) -> ApiError {
    crate::conversations::store_error(&e.0)
}
