//! Direct SQL on a test server's database, for what no route writes.
use sqlx::Row;

use super::server::TestApp;

/// Now in milliseconds since the epoch, as the store writes its times.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_millis() as i64
}

/// A connection to `app`'s database.
pub async fn connect(app: &TestApp) -> sqlx::AnyConnection {
    sqlx::any::install_default_drivers();
    <sqlx::AnyConnection as sqlx::Connection>::connect(&app.database_url).await.expect("connect")
}

/// Records an event of `account` as `store::events::record` does (without fanning it out to
/// deliveries); returns its id and sequence.
pub async fn record_event(
    app: &TestApp,
    account: &str,
    event_type: &str,
    data: &str,
    created_at: i64,
) -> (String, i64) {
    let mut conn = connect(app).await;
    let sequence: i64 = sqlx::query(
        "INSERT INTO event_sequences (account_id, last) VALUES ($1, 1) \
         ON CONFLICT (account_id) DO UPDATE SET last = event_sequences.last + 1 RETURNING last",
    )
    .bind(account)
    .fetch_one(&mut conn)
    .await
    .expect("sequence")
    .get("last");
    let id = uuid::Uuid::now_v7().to_string();
    sqlx::query(
        "INSERT INTO events (id, account_id, sequence, type, data, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&id)
    .bind(account)
    .bind(sequence)
    .bind(event_type)
    .bind(data)
    .bind(created_at)
    .execute(&mut conn)
    .await
    .expect("event");
    (id, sequence)
}
