//! Ticket types. Creation counts them on the campaign row with a conditional update, so
//! "bootstrap only while the campaign has none" holds under concurrency on both databases.
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::Row;

use super::audit::{record, Audit};
use super::query::{Arg, Filter};
use super::{Store, StoreError, StoreResult, UpdateError};
use crate::domain::campaigns::{CampaignStatus, CampaignType};
use crate::domain::new_id;
use crate::domain::ticket_types::{quantity_below_sold, NewTicketType, TicketTypePatch, TicketTypeStatus};
use crate::domain::time::now_ms;

#[derive(Debug, Clone, PartialEq)]
pub struct TicketType {
    pub id: String,
    pub campaign_id: String,
    pub name: String,
    pub description: Option<String>,
    pub kind: String,
    pub price: i64,
    pub quantity_available: i64,
    pub quantity_sold: i64,
    pub quantity_held: i64,
    pub max_per_person: i64,
    pub status: TicketTypeStatus,
    pub required_attendee_fields: Value,
    pub created_at: i64,
}

const COLUMNS: &str =
    "t.id, t.campaign_id, t.name, t.description, t.ticket_type, t.price, t.quantity_available, t.quantity_sold, \
    t.quantity_held, t.max_per_person, t.status, t.required_attendee_fields, t.created_at";

fn from_row(r: &AnyRow) -> StoreResult<TicketType> {
    let fields: String = r.try_get("required_attendee_fields")?;
    let status: String = r.try_get("status")?;
    Ok(TicketType {
        id: r.try_get("id")?,
        campaign_id: r.try_get("campaign_id")?,
        name: r.try_get("name")?,
        description: r.try_get("description")?,
        kind: r.try_get("ticket_type")?,
        price: r.try_get("price")?,
        quantity_available: r.try_get("quantity_available")?,
        quantity_sold: r.try_get("quantity_sold")?,
        quantity_held: r.try_get("quantity_held")?,
        max_per_person: r.try_get("max_per_person")?,
        status: TicketTypeStatus::parse("status", &status)
            .map_err(|_| StoreError::Corrupt("ticket type status".into()))?,
        required_attendee_fields: serde_json::from_str(&fields)
            .map_err(|_| StoreError::Corrupt("attendee fields".into()))?,
        created_at: r.try_get("created_at")?,
    })
}

/// Which ticket types a public list shows.
#[derive(Debug, Default, Clone)]
pub struct TicketTypeQuery {
    pub campaign_id: Option<String>,
    pub page: u32,
    pub limit: u32,
}

async fn insert(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    campaign_id: &str,
    t: &NewTicketType,
    now: i64,
) -> StoreResult<TicketType> {
    let id = new_id();
    sqlx::query(
        "INSERT INTO ticket_types (id, account_id, campaign_id, name, description, ticket_type, price, quantity_available, \
         max_per_person, status, required_attendee_fields, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)",
    )
    .bind(&id)
    .bind(account_id)
    .bind(campaign_id)
    .bind(&t.name)
    .bind(t.description.as_deref())
    .bind(&t.kind)
    .bind(t.price)
    .bind(t.quantity_available)
    .bind(t.max_per_person)
    .bind(t.status.as_str())
    .bind(t.required_attendee_fields.to_string())
    .bind(now)
    .execute(conn)
    .await?;
    Ok(TicketType {
        id,
        campaign_id: campaign_id.into(),
        name: t.name.clone(),
        description: t.description.clone(),
        kind: t.kind.clone(),
        price: t.price,
        quantity_available: t.quantity_available,
        quantity_sold: 0,
        quantity_held: 0,
        max_per_person: t.max_per_person,
        status: t.status,
        required_attendee_fields: t.required_attendee_fields.clone(),
        created_at: now,
    })
}

/// Why the campaign refused ticket types: absent (404) or a conflict (409).
async fn refusal(conn: &mut sqlx::AnyConnection, account_id: &str, campaign_id: &str, bootstrap: bool) -> StoreError {
    let row =
        sqlx::query("SELECT campaign_type, status, ticket_type_count FROM campaigns WHERE account_id = $1 AND id = $2")
            .bind(account_id)
            .bind(campaign_id)
            .fetch_optional(conn)
            .await;
    match row {
        Ok(None) => StoreError::NotFound("campaign"),
        Ok(Some(r)) => {
            let kind: String = r.try_get("campaign_type").unwrap_or_default();
            let status: String = r.try_get("status").unwrap_or_default();
            if kind != CampaignType::Ticketing.as_str() {
                StoreError::Conflict("ticket types belong to ticketing campaigns only".into())
            } else if status == CampaignStatus::Archived.as_str() {
                StoreError::Conflict("the campaign is archived".into())
            } else if bootstrap {
                StoreError::Conflict(
                    "the campaign already has ticket types; bootstrap only sets up an empty campaign".into(),
                )
            } else {
                StoreError::Conflict("the campaign changed; retry".into())
            }
        }
        Err(e) => e.into(),
    }
}

/// Counts `n` new ticket types on their campaign with one conditional update, so that only a
/// ticketing campaign that is not archived takes them (and, for a bootstrap, only while it has
/// none); when no row matched, [`refusal`] says why.
async fn count_on_campaign(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    campaign_id: &str,
    n: i64,
    bootstrap: bool,
    now: i64,
) -> StoreResult<()> {
    let sql = if bootstrap {
        "UPDATE campaigns SET ticket_type_count = $1, updated_at = $2 \
         WHERE account_id = $3 AND id = $4 AND campaign_type = 'ticketing' AND status <> 'archived' AND ticket_type_count = 0"
    } else {
        "UPDATE campaigns SET ticket_type_count = ticket_type_count + $1, updated_at = $2 \
         WHERE account_id = $3 AND id = $4 AND campaign_type = 'ticketing' AND status <> 'archived'"
    };
    let matched = sqlx::query(sql)
        .bind(n)
        .bind(now)
        .bind(account_id)
        .bind(campaign_id)
        .execute(&mut *conn)
        .await?
        .rows_affected();
    if matched == 0 {
        return Err(refusal(conn, account_id, campaign_id, bootstrap).await);
    }
    Ok(())
}

impl Store {
    pub async fn create_ticket_type(
        &self,
        account_id: &str,
        campaign_id: &str,
        t: &NewTicketType,
        audit: Audit<'_>,
    ) -> StoreResult<TicketType> {
        let now = now_ms();
        let mut tx = self.writer().begin().await?;
        count_on_campaign(&mut tx, account_id, campaign_id, 1, false, now).await?;
        let created = insert(&mut tx, account_id, campaign_id, t, now).await?;
        let summary = serde_json::json!({"after": {"campaignId": campaign_id, "name": created.name, "price": created.price, "quantity_available": created.quantity_available}});
        record(&mut tx, account_id, &Audit { entity_id: &created.id, summary, ..audit }).await?;
        tx.commit().await?;
        Ok(created)
    }

    /// Creates all of `types` at once, only while the campaign has none (D3.6).
    pub async fn bootstrap_ticket_types(
        &self,
        account_id: &str,
        campaign_id: &str,
        types: &[NewTicketType],
        audit: Audit<'_>,
    ) -> StoreResult<Vec<TicketType>> {
        let now = now_ms();
        let mut tx = self.writer().begin().await?;
        count_on_campaign(&mut tx, account_id, campaign_id, types.len() as i64, true, now).await?;
        let mut created = Vec::with_capacity(types.len());
        for t in types {
            created.push(insert(&mut tx, account_id, campaign_id, t, now).await?);
        }
        let names: Vec<&str> = created.iter().map(|t| t.name.as_str()).collect();
        let summary = serde_json::json!({"after": {"ticketTypes": names}});
        record(&mut tx, account_id, &Audit { entity_id: campaign_id, summary, ..audit }).await?;
        tx.commit().await?;
        Ok(created)
    }

    /// Active ticket types of approved campaigns (what browsers may see), newest first.
    pub async fn list_public_ticket_types(
        &self,
        account_id: &str,
        q: &TicketTypeQuery,
    ) -> StoreResult<(Vec<TicketType>, u64)> {
        let mut f = Filter::new();
        f.and("t.account_id = ?", Arg::Text(account_id.into()));
        f.and("t.status = ?", Arg::Text(TicketTypeStatus::Active.as_str().into()));
        f.and("c.status = ?", Arg::Text(CampaignStatus::Approved.as_str().into()));
        if let Some(c) = &q.campaign_id {
            f.and("t.campaign_id = ?", Arg::Text(c.clone()));
        }
        let from = "FROM ticket_types t JOIN campaigns c ON c.id = t.campaign_id";
        self.page(COLUMNS, from, "t.created_at DESC, t.id DESC", &f, (q.page, q.limit), from_row).await
    }

    /// Active ticket types of the given campaigns, oldest first (storefront order).
    pub async fn active_ticket_types_of(
        &self,
        account_id: &str,
        campaign_ids: &[String],
    ) -> StoreResult<Vec<TicketType>> {
        if campaign_ids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders: Vec<String> = (0..campaign_ids.len()).map(|i| format!("${}", i + 2)).collect();
        let sql = format!(
            "SELECT {COLUMNS} FROM ticket_types t WHERE t.account_id = $1 AND t.status = 'active' AND t.campaign_id IN ({}) \
             ORDER BY t.created_at, t.id",
            placeholders.join(", ")
        );
        let mut q = sqlx::query(&sql).bind(account_id);
        for id in campaign_ids {
            q = q.bind(id.as_str());
        }
        q.fetch_all(self.reader()).await?.iter().map(from_row).collect()
    }
}

/// What an audit entry shows of a ticket type.
fn summary(t: &TicketType) -> Value {
    serde_json::json!({
        "name": t.name, "price": t.price, "quantity_available": t.quantity_available,
        "max_per_person": t.max_per_person, "status": t.status.as_str(),
    })
}

async fn read_one(conn: &mut sqlx::AnyConnection, account_id: &str, id: &str) -> StoreResult<Option<TicketType>> {
    sqlx::query(&format!("SELECT {COLUMNS} FROM ticket_types t WHERE t.account_id = $1 AND t.id = $2"))
        .bind(account_id)
        .bind(id)
        .fetch_optional(conn)
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

impl Store {
    /// Changes a ticket type (D17.15) in one statement whose condition keeps the quantity at or
    /// above sold + held, so a checkout holding seats at the same time cannot slip under it
    /// (409 `quantity_below_sold`); the audit entry is written in the same transaction.
    pub async fn update_ticket_type(
        &self,
        account_id: &str,
        id: &str,
        p: &TicketTypePatch,
        audit: Audit<'_>,
    ) -> Result<TicketType, UpdateError> {
        let mut tx = self.writer().begin().await?;
        let before = read_one(&mut tx, account_id, id).await?.ok_or(StoreError::NotFound("ticket type"))?;
        let changed = sqlx::query(
            "UPDATE ticket_types SET name = COALESCE($1, name), description = COALESCE($2, description), \
             price = COALESCE($3, price), quantity_available = COALESCE($4, quantity_available), \
             max_per_person = COALESCE($5, max_per_person), status = COALESCE($6, status), updated_at = $7 \
             WHERE account_id = $8 AND id = $9 AND COALESCE($4, quantity_available) >= quantity_sold + quantity_held",
        )
        .bind(p.name.as_deref())
        .bind(p.description.as_deref())
        .bind(p.price)
        .bind(p.quantity_available)
        .bind(p.max_per_person)
        .bind(p.status.map(TicketTypeStatus::as_str))
        .bind(now_ms())
        .bind(account_id)
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let after = read_one(&mut tx, account_id, id).await?.ok_or(StoreError::NotFound("ticket type"))?;
        if changed == 0 {
            return Err(quantity_below_sold(after.quantity_sold + after.quantity_held).into());
        }
        let action = if before.status != after.status { "ticket_type.status_changed" } else { "ticket_type.updated" };
        let summary = serde_json::json!({"before": summary(&before), "after": summary(&after)});
        record(&mut tx, account_id, &Audit { action, entity_id: id, summary, ..audit }).await?;
        tx.commit().await?;
        Ok(after)
    }
}

impl Store {
    /// One ticket type of the account (another account's looks like none).
    pub async fn ticket_type(&self, account_id: &str, id: &str) -> StoreResult<TicketType> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM ticket_types t WHERE t.account_id = $1 AND t.id = $2"))
            .bind(account_id)
            .bind(id)
            .fetch_optional(self.reader())
            .await?
            .ok_or(StoreError::NotFound("ticket type"))?;
        from_row(&row)
    }
}

/// The inventory statements the checkout and fulfilment flows run in their transactions. Each is
/// one conditional update, so seats are never sold or held beyond `quantity_available` whatever
/// runs at the same time: `quantity_sold + quantity_held + n <= quantity_available`.
pub(crate) mod inventory {
    use crate::store::StoreResult;

    /// How seats are taken: held for a pending payment, or sold at once (a free purchase).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Take {
        Hold,
        Sell,
    }

    /// Takes `n` seats of an active ticket type of the account. Returns whether they were free.
    pub(crate) async fn take(
        conn: &mut sqlx::AnyConnection,
        account_id: &str,
        ticket_type_id: &str,
        n: i64,
        how: Take,
        now: i64,
    ) -> StoreResult<bool> {
        // The column is one of two constants, never input.
        let column = match how {
            Take::Hold => "quantity_held",
            Take::Sell => "quantity_sold",
        };
        Ok(sqlx::query(&format!(
            "UPDATE ticket_types SET {column} = {column} + $1, updated_at = $2 \
             WHERE id = $3 AND account_id = $4 AND status = 'active' \
             AND quantity_sold + quantity_held + $1 <= quantity_available"
        ))
        .bind(n)
        .bind(now)
        .bind(ticket_type_id)
        .bind(account_id)
        .execute(conn)
        .await?
        .rows_affected()
            == 1)
    }

    /// Turns `held` held seats into `n` sold ones (a paid reservation).
    pub(crate) async fn sell_held(
        conn: &mut sqlx::AnyConnection,
        ticket_type_id: &str,
        held: i64,
        n: i64,
        now: i64,
    ) -> StoreResult<()> {
        sqlx::query(
            "UPDATE ticket_types SET quantity_held = quantity_held - $1, quantity_sold = quantity_sold + $2, \
             updated_at = $3 WHERE id = $4",
        )
        .bind(held)
        .bind(n)
        .bind(now)
        .bind(ticket_type_id)
        .execute(conn)
        .await?;
        Ok(())
    }

    /// Sells `n` seats if that many are still free, whatever the ticket type's status (a payment
    /// that came after its hold was released). Returns whether they were.
    pub(crate) async fn sell_if_free(
        conn: &mut sqlx::AnyConnection,
        ticket_type_id: &str,
        n: i64,
        now: i64,
    ) -> StoreResult<bool> {
        Ok(sqlx::query(
            "UPDATE ticket_types SET quantity_sold = quantity_sold + $1, updated_at = $2 \
             WHERE id = $3 AND quantity_sold + quantity_held + $1 <= quantity_available",
        )
        .bind(n)
        .bind(now)
        .bind(ticket_type_id)
        .execute(conn)
        .await?
        .rows_affected()
            == 1)
    }

    /// Gives `n` held seats back.
    pub(crate) async fn release(
        conn: &mut sqlx::AnyConnection,
        ticket_type_id: &str,
        n: i64,
        now: i64,
    ) -> StoreResult<()> {
        sqlx::query("UPDATE ticket_types SET quantity_held = quantity_held - $1, updated_at = $2 WHERE id = $3")
            .bind(n)
            .bind(now)
            .bind(ticket_type_id)
            .execute(conn)
            .await?;
        Ok(())
    }
}
