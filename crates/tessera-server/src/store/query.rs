//! A small builder for list queries with optional filters and numbered parameters.
use sqlx::any::AnyArguments;
use sqlx::query::Query;
use sqlx::Any;

use super::sqlite_read::{FromRow, Get};

#[derive(Clone)]
pub enum Arg {
    Text(String),
    Int(i64),
}

#[derive(Default)]
pub struct Filter {
    clauses: Vec<String>,
    args: Vec<Arg>,
}

impl Filter {
    pub fn new() -> Self {
        Filter::default()
    }

    /// Adds a clause; `?` in it is replaced by the next parameter number.
    pub fn and(&mut self, clause: &str, arg: Arg) -> &mut Self {
        self.args.push(arg);
        self.clauses.push(clause.replace('?', &format!("${}", self.args.len())));
        self
    }

    pub fn where_sql(&self) -> String {
        if self.clauses.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.clauses.join(" AND "))
        }
    }

    /// The parameters, in number order.
    pub fn args(&self) -> &[Arg] {
        &self.args
    }

    /// The next parameter number (for LIMIT/OFFSET after the filters).
    pub fn next(&self) -> usize {
        self.args.len() + 1
    }

    pub fn bind<'q>(&'q self, mut q: Query<'q, Any, AnyArguments<'q>>) -> Query<'q, Any, AnyArguments<'q>> {
        for a in &self.args {
            q = match a {
                Arg::Text(s) => q.bind(s.as_str()),
                Arg::Int(i) => q.bind(*i),
            };
        }
        q
    }
}

/// A `LIKE` pattern matching `needle` anywhere, with `%`, `_` and `\` escaped.
pub fn contains_pattern(needle: &str) -> String {
    let mut p = String::from("%");
    for c in needle.chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

/// One page: offset from 1-based page and limit.
pub fn offset(page: u32, limit: u32) -> i64 {
    i64::from(page.saturating_sub(1)) * i64::from(limit)
}

impl super::Store {
    /// One page of `SELECT {columns} {from}` under the filter, newest first by `order`, with the
    /// total the filter matches.
    ///
    /// One round trip: the total rides on every row as an uncorrelated scalar subquery, which
    /// SQLite and PostgreSQL both evaluate once per statement, while the page itself still
    /// walks the `(account_id, created_at)` index and stops after `limit` rows. (A window
    /// `COUNT(*) OVER ()` would also be one statement, but it materialises every matching row,
    /// metadata included, before the limit applies.) Only a page past the end, which has no row
    /// to carry the total, costs a second query.
    pub(crate) async fn page<T>(
        &self,
        columns: &str,
        from: &str,
        order: &str,
        f: &Filter,
        (page, limit): (u32, u32),
        map: fn(&sqlx::any::AnyRow) -> super::StoreResult<T>,
    ) -> super::StoreResult<(Vec<T>, u64)> {
        use sqlx::Row;
        let w = f.where_sql();
        let n = f.next();
        let sql = format!(
            "SELECT {columns}, (SELECT COUNT(*) {from}{w}) AS total_rows {from}{w} ORDER BY {order} LIMIT ${n} OFFSET ${}",
            n + 1
        );
        let rows =
            f.bind(sqlx::query(&sql)).bind(i64::from(limit)).bind(offset(page, limit)).fetch_all(self.reader()).await?;
        let total: i64 = match rows.first() {
            Some(r) => r.try_get("total_rows")?,
            None if page <= 1 => 0,
            None => f
                .bind(sqlx::query(&format!("SELECT COUNT(*) AS n {from}{w}")))
                .fetch_one(self.reader())
                .await?
                .try_get("n")?,
        };
        Ok((rows.iter().map(map).collect::<super::StoreResult<_>>()?, total.max(0) as u64))
    }

    /// [`Self::page`] for entities that map from either driver's rows ([`FromRow`]): on a
    /// SQLite file the statement runs in place on the calling thread (`store::sqlite_read`),
    /// each row read straight from SQLite; elsewhere through sqlx as [`Self::page`] does. The
    /// list profile put most of a list's CPU in sqlx's way of running SQLite (a worker thread
    /// per connection, a channel message per row, a copy per value, another into `AnyRow`).
    pub(crate) async fn page_of<T: FromRow>(
        &self,
        columns: &str,
        from: &str,
        order: &str,
        f: &Filter,
        (page, limit): (u32, u32),
    ) -> super::StoreResult<(Vec<T>, u64)> {
        let Some(fast) = self.fast_reader() else {
            return self.page(columns, from, order, f, (page, limit), |r| T::from_row(r)).await;
        };
        let w = f.where_sql();
        let n = f.next();
        let sql = format!(
            "SELECT {columns}, (SELECT COUNT(*) {from}{w}) AS total_rows {from}{w} ORDER BY {order} LIMIT ${n} OFFSET ${}",
            n + 1
        );
        let mut args = f.args().to_vec();
        args.extend([Arg::Int(i64::from(limit)), Arg::Int(offset(page, limit))]);
        let mut total = None;
        let items = fast.query(&sql, &args, |r| {
            if total.is_none() {
                total = Some(Get::get::<i64>(r, "total_rows")?);
            }
            T::from_row(r)
        })?;
        let total = match total {
            Some(t) => t,
            None if page <= 1 => 0,
            None => fast
                .query_opt(&format!("SELECT COUNT(*) AS n {from}{w}"), f.args(), |r| Get::get::<i64>(r, "n"))?
                .unwrap_or(0),
        };
        Ok((items, total.max(0) as u64))
    }
}
