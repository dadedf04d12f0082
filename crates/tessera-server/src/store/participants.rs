//! Voting participants (nominees).
use sqlx::any::AnyRow;
use sqlx::Row;

use super::audit::{record, Audit};
use super::query::{contains_pattern, Arg, Filter};
use super::{unique_to_conflict, Store, StoreError, StoreResult};
use crate::domain::new_id;
pub use crate::domain::participants::NewParticipant;
use crate::domain::participants::{generated_code, ParticipantPatch, ParticipantStatus};
use crate::domain::time::now_ms;

/// A nominee as stored, with the votes counted for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Participant {
    pub id: String,
    pub campaign_id: String,
    pub status: ParticipantStatus,
    pub votes: i64,
    pub name: String,
    pub code: String,
    pub description: Option<String>,
    pub image_url: Option<String>,
    pub created_at: i64,
}

#[derive(Debug, Default, Clone)]
pub struct ParticipantQuery {
    pub campaign_id: Option<String>,
    pub search: Option<String>,
    pub status: Option<ParticipantStatus>,
    pub page: u32,
    pub limit: u32,
}

const COLUMNS: &str = "id, campaign_id, name, code, description, image_url, status, votes, created_at";

fn from_row(r: &AnyRow) -> StoreResult<Participant> {
    let status: String = r.try_get("status")?;
    Ok(Participant {
        id: r.try_get("id")?,
        campaign_id: r.try_get("campaign_id")?,
        name: r.try_get("name")?,
        code: r.try_get("code")?,
        description: r.try_get("description")?,
        image_url: r.try_get("image_url")?,
        status: ParticipantStatus::parse("status", &status)
            .map_err(|_| StoreError::Corrupt("participant status".into()))?,
        votes: r.try_get("votes")?,
        created_at: r.try_get("created_at")?,
    })
}

impl Store {
    /// Adds a nominee to a voting campaign; without a code it gets the next free `NNN`.
    pub async fn create_participant(
        &self,
        account_id: &str,
        campaign_id: &str,
        p: NewParticipant,
        audit: Audit<'_>,
    ) -> StoreResult<Participant> {
        let now = now_ms();
        let mut tx = self.writer().begin().await?;
        let counted = sqlx::query(
            "UPDATE campaigns SET participant_count = participant_count + 1, updated_at = $1 \
             WHERE account_id = $2 AND id = $3 AND campaign_type = 'voting' AND status <> 'archived' RETURNING participant_count",
        )
        .bind(now)
        .bind(account_id)
        .bind(campaign_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(counted) = counted else {
            let row = sqlx::query("SELECT campaign_type FROM campaigns WHERE account_id = $1 AND id = $2")
                .bind(account_id)
                .bind(campaign_id)
                .fetch_optional(&mut *tx)
                .await?;
            return Err(match row {
                None => StoreError::NotFound("campaign"),
                Some(r) if r.try_get::<String, _>("campaign_type")? != "voting" => {
                    StoreError::Conflict("participants belong to voting campaigns only".into())
                }
                Some(_) => StoreError::Conflict("the campaign is archived".into()),
            });
        };
        let code = match p.code {
            Some(c) => c,
            None => {
                let mut n: i64 = counted.try_get("participant_count")?;
                loop {
                    let c = generated_code(n);
                    let taken = sqlx::query("SELECT 1 FROM participants WHERE campaign_id = $1 AND code = $2")
                        .bind(campaign_id)
                        .bind(&c)
                        .fetch_optional(&mut *tx)
                        .await?
                        .is_some();
                    if !taken {
                        break c;
                    }
                    n += 1;
                }
            }
        };
        let id = new_id();
        sqlx::query(
            "INSERT INTO participants (id, account_id, campaign_id, name, code, search_text, description, image_url, status, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)",
        )
        .bind(&id)
        .bind(account_id)
        .bind(campaign_id)
        .bind(&p.name)
        .bind(&code)
        .bind(format!("{}\n{}", p.name.to_lowercase(), code.to_lowercase()))
        .bind(p.description.as_deref())
        .bind(p.image_url.as_deref())
        .bind(p.status.as_str())
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(|e| unique_to_conflict(e, "a participant with this code already exists in the campaign"))?;
        let summary = serde_json::json!({"after": {"campaignId": campaign_id, "name": p.name, "code": code, "status": p.status.as_str()}});
        record(&mut tx, account_id, &Audit { entity_id: &id, summary, ..audit }).await?;
        tx.commit().await?;
        Ok(Participant {
            id,
            campaign_id: campaign_id.into(),
            name: p.name,
            code,
            description: p.description,
            image_url: p.image_url,
            status: p.status,
            votes: 0,
            created_at: now,
        })
    }

    pub async fn list_participants(
        &self,
        account_id: &str,
        q: &ParticipantQuery,
    ) -> StoreResult<(Vec<Participant>, u64)> {
        let mut f = Filter::new();
        f.and("account_id = ?", Arg::Text(account_id.into()));
        if let Some(c) = &q.campaign_id {
            f.and("campaign_id = ?", Arg::Text(c.clone()));
        }
        if let Some(s) = q.search.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            f.and("search_text LIKE ? ESCAPE '\\'", Arg::Text(contains_pattern(&s.to_lowercase())));
        }
        if let Some(s) = q.status {
            f.and("status = ?", Arg::Text(s.as_str().into()));
        }
        self.page(COLUMNS, "FROM participants", "created_at DESC, id DESC", &f, (q.page, q.limit), from_row).await
    }
}

/// What an audit entry shows of a nominee.
fn summary(p: &Participant) -> serde_json::Value {
    serde_json::json!({"name": p.name, "description": p.description, "imageUrl": p.image_url, "status": p.status.as_str()})
}

async fn read_one(conn: &mut sqlx::AnyConnection, account_id: &str, id: &str) -> StoreResult<Participant> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM participants WHERE account_id = $1 AND id = $2"))
        .bind(account_id)
        .bind(id)
        .fetch_optional(conn)
        .await?
        .ok_or(StoreError::NotFound("participant"))?;
    from_row(&row)
}

impl Store {
    /// Changes a nominee (D17.15) and records the change, in one transaction.
    pub async fn update_participant(
        &self,
        account_id: &str,
        id: &str,
        p: &ParticipantPatch,
        audit: Audit<'_>,
    ) -> StoreResult<Participant> {
        let mut tx = self.writer().begin().await?;
        let before = read_one(&mut tx, account_id, id).await?;
        let name = p.name.as_deref().unwrap_or(&before.name);
        sqlx::query(
            "UPDATE participants SET name = $1, search_text = $2, description = COALESCE($3, description), \
             image_url = COALESCE($4, image_url), status = COALESCE($5, status), updated_at = $6 \
             WHERE account_id = $7 AND id = $8",
        )
        .bind(name)
        .bind(format!("{}\n{}", name.to_lowercase(), before.code.to_lowercase()))
        .bind(p.description.as_deref())
        .bind(p.image_url.as_deref())
        .bind(p.status.map(ParticipantStatus::as_str))
        .bind(now_ms())
        .bind(account_id)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let after = read_one(&mut tx, account_id, id).await?;
        let action = if before.status != after.status { "participant.status_changed" } else { "participant.updated" };
        let summary = serde_json::json!({"before": summary(&before), "after": summary(&after)});
        record(&mut tx, account_id, &Audit { action, entity_id: id, summary, ..audit }).await?;
        tx.commit().await?;
        Ok(after)
    }

    /// One participant of the account (another account's looks like none).
    pub async fn participant(&self, account_id: &str, id: &str) -> StoreResult<Participant> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM participants WHERE account_id = $1 AND id = $2"))
            .bind(account_id)
            .bind(id)
            .fetch_optional(self.reader())
            .await?
            .ok_or(StoreError::NotFound("participant"))?;
        from_row(&row)
    }

    /// The account's nominees with this short code (D17.20), oldest campaign first: a code is
    /// unique within a campaign, not across them.
    pub async fn participants_by_code(&self, account_id: &str, code: &str) -> StoreResult<Vec<Participant>> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM participants WHERE account_id = $1 AND code = $2 ORDER BY created_at, id"
        ))
        .bind(account_id)
        .bind(code)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(from_row).collect()
    }
}

/// Adds `n` paid votes to a participant, in the caller's transaction.
pub(crate) async fn add_votes(
    conn: &mut sqlx::AnyConnection,
    participant_id: &str,
    n: i64,
    now: i64,
) -> StoreResult<()> {
    sqlx::query("UPDATE participants SET votes = votes + $1, updated_at = $2 WHERE id = $3")
        .bind(n)
        .bind(now)
        .bind(participant_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// A nominee as the public sees it (D17.17): active, in an approved voting campaign of the
/// account, with its campaign's `metadata.showVoteCounts` so the caller knows whether `votes`
/// may be shown.
#[derive(Debug, Clone, PartialEq)]
pub struct PublicParticipant {
    pub id: String,
    pub campaign_id: String,
    pub name: String,
    pub code: String,
    pub description: Option<String>,
    pub image_url: Option<String>,
    pub votes: i64,
    /// The campaign's `metadata.showVoteCounts` is `true` (D12.5).
    pub show_votes: bool,
}

/// What the domain-key form of `GET /participants` asks for.
#[derive(Debug, Default, Clone)]
pub struct PublicParticipantQuery {
    /// The `campaignId` filter.
    pub campaign_id: Option<String>,
    /// A campaign key sees its own campaign only.
    pub only_campaign: Option<String>,
    pub search: Option<String>,
    /// The `status` filter: anything but `active` finds nothing here.
    pub status: Option<ParticipantStatus>,
    pub page: u32,
    pub limit: u32,
}

const PUBLIC_COLUMNS: &str =
    "p.id, p.campaign_id, p.name, p.code, p.description, p.image_url, p.votes, c.metadata AS campaign_metadata";

/// Participants joined to their campaign, restricted to what the public may see: active
/// nominees (hidden and eliminated ones leave public lists, D17.15) of approved voting campaigns.
const PUBLIC_FROM: &str =
    "FROM participants p JOIN campaigns c ON c.id = p.campaign_id AND c.account_id = p.account_id";

fn public_filter(account_id: &str) -> Filter {
    let mut f = Filter::new();
    f.and("p.account_id = ?", Arg::Text(account_id.into()));
    f.and("p.status = ?", Arg::Text(ParticipantStatus::Active.as_str().into()));
    f.and("c.campaign_type = ?", Arg::Text("voting".into()));
    f.and("c.status = ?", Arg::Text("approved".into()));
    f
}

/// Whether a stored campaign metadata object says `showVoteCounts: true`.
pub fn shows_vote_counts(metadata: &serde_json::Value) -> bool {
    metadata.get("showVoteCounts").and_then(serde_json::Value::as_bool) == Some(true)
}

fn public_from_row(r: &AnyRow) -> StoreResult<PublicParticipant> {
    let metadata: String = r.try_get("campaign_metadata")?;
    let metadata: serde_json::Value =
        serde_json::from_str(&metadata).map_err(|_| StoreError::Corrupt("campaign metadata".into()))?;
    Ok(PublicParticipant {
        id: r.try_get("id")?,
        campaign_id: r.try_get("campaign_id")?,
        name: r.try_get("name")?,
        code: r.try_get("code")?,
        description: r.try_get("description")?,
        image_url: r.try_get("image_url")?,
        votes: r.try_get("votes")?,
        show_votes: shows_vote_counts(&metadata),
    })
}

/// A leaderboard line as stored: a nominee that is not hidden (D17.18), with its votes.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub id: String,
    pub name: String,
    pub code: String,
    pub votes: i64,
    pub updated_at: i64,
}

impl Store {
    /// The public nominees list (D17.17), newest first like the signed list.
    pub async fn list_public_participants(
        &self,
        account_id: &str,
        q: &PublicParticipantQuery,
    ) -> StoreResult<(Vec<PublicParticipant>, u64)> {
        let mut f = public_filter(account_id);
        for c in [&q.campaign_id, &q.only_campaign].into_iter().flatten() {
            f.and("p.campaign_id = ?", Arg::Text(c.clone()));
        }
        if let Some(s) = q.search.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            f.and("p.search_text LIKE ? ESCAPE '\\'", Arg::Text(contains_pattern(&s.to_lowercase())));
        }
        if let Some(s) = q.status {
            f.and("p.status = ?", Arg::Text(s.as_str().into()));
        }
        self.page(PUBLIC_COLUMNS, PUBLIC_FROM, "p.created_at DESC, p.id DESC", &f, (q.page, q.limit), public_from_row)
            .await
    }

    /// The public nominees of each of `campaign_ids` (the storefront's voting items, D17.17),
    /// newest first.
    pub async fn public_participants_of(
        &self,
        account_id: &str,
        campaign_ids: &[String],
    ) -> StoreResult<Vec<PublicParticipant>> {
        if campaign_ids.is_empty() {
            return Ok(Vec::new());
        }
        let f = public_filter(account_id);
        let n = f.next();
        let list: Vec<String> = (0..campaign_ids.len()).map(|i| format!("${}", n + i)).collect();
        let sql = format!(
            "SELECT {PUBLIC_COLUMNS} {PUBLIC_FROM}{} AND p.campaign_id IN ({}) ORDER BY p.created_at DESC, p.id DESC",
            f.where_sql(),
            list.join(", ")
        );
        let mut q = f.bind(sqlx::query(&sql));
        for id in campaign_ids {
            q = q.bind(id.as_str());
        }
        q.fetch_all(self.reader()).await?.iter().map(public_from_row).collect()
    }

    /// Every nominee of the campaign that is not hidden, with its votes (the leaderboard's
    /// lines, D17.18; eliminated ones keep the votes they had, so they stay listed).
    pub async fn standings(&self, account_id: &str, campaign_id: &str) -> StoreResult<Vec<Standing>> {
        let rows = sqlx::query(
            "SELECT id, name, code, votes, updated_at FROM participants \
             WHERE account_id = $1 AND campaign_id = $2 AND status <> $3",
        )
        .bind(account_id)
        .bind(campaign_id)
        .bind(ParticipantStatus::Hidden.as_str())
        .fetch_all(self.reader())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(Standing {
                    id: r.try_get("id")?,
                    name: r.try_get("name")?,
                    code: r.try_get("code")?,
                    votes: r.try_get("votes")?,
                    updated_at: r.try_get("updated_at")?,
                })
            })
            .collect()
    }
}
