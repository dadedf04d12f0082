//! Synchronous SQLite reads for hot, small, bounded queries (the list fast path).
//!
//! sqlx runs each SQLite connection on its own OS thread and moves every command and every row
//! over a channel; the list profile (docs/performance.md) put most of a list's CPU there, in the
//! pool around it and in the thread wake-ups, and a sixth in SQLite itself. A read here runs
//! the statement in place on the calling task's thread, on a read-only connection taken from a
//! small idle list, with the statement prepared once per connection (`prepare_cached`).
//!
//! Only for statements that are short and bounded (a page of at most 100 rows on an index):
//! the calling tokio worker is busy for as long as SQLite is, as with a short lock. WAL mode
//! (set by the writer) means a reader never waits for the writer. Writes never come here.
use std::cell::Cell;
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags};

use super::query::Arg;
use super::{StoreError, StoreResult};

/// Connections kept open between reads; more may exist at once while reads overlap.
const MAX_IDLE: usize = 16;

#[derive(Debug)]
pub struct SyncReader {
    path: String,
    idle: Mutex<Vec<Connection>>,
    /// The one connection `PRAGMA data_version` is asked on (its value is per connection).
    version: Mutex<Option<Connection>>,
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Read(e.to_string())
    }
}

impl SyncReader {
    /// A reader of the SQLite file at `path` (which the writer has created and put in WAL mode).
    pub fn new(path: String) -> Self {
        SyncReader { path, idle: Mutex::new(Vec::new()), version: Mutex::new(None) }
    }

    /// SQLite's `data_version` as seen by a connection that never writes: it changes whenever
    /// another connection (any process) commits (`store::page_cache`).
    pub fn data_version(&self) -> StoreResult<i64> {
        let mut slot = self.version.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(self.open()?);
        }
        let conn = slot.as_ref().ok_or(StoreError::NotFound("connection"))?;
        let v = conn.query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0));
        if v.is_err() {
            *slot = None;
        }
        Ok(v?)
    }

    fn open(&self) -> StoreResult<Connection> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.set_prepared_statement_cache_capacity(32);
        Ok(conn)
    }

    /// Runs `f` on an idle connection (opened when none is idle) and puts it back afterwards.
    /// A connection whose statement failed is dropped rather than reused.
    pub fn with<T>(&self, f: impl FnOnce(&Connection) -> StoreResult<T>) -> StoreResult<T> {
        let taken = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match taken {
            Some(c) => c,
            None => self.open()?,
        };
        let result = f(&conn);
        if result.is_ok() {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            if idle.len() < MAX_IDLE {
                idle.push(conn);
            }
        }
        result
    }

    /// Every row of a statement whose parameters are numbered `$1…$n` (the store's SQL style,
    /// which SQLite reads as named parameters), bound in order from `args`.
    pub fn query<T>(
        &self,
        sql: &str,
        args: &[Arg],
        mut map: impl FnMut(&FastRow<'_, '_>) -> StoreResult<T>,
    ) -> StoreResult<Vec<T>> {
        self.with(|conn| {
            let mut stmt = conn.prepare_cached(sql)?;
            let names: Vec<String> = stmt.column_names().into_iter().map(str::to_string).collect();
            for (i, arg) in args.iter().enumerate() {
                let Some(index) = stmt.parameter_index(&format!("${}", i + 1))? else { continue };
                match arg {
                    Arg::Text(s) => stmt.raw_bind_parameter(index, s.as_str())?,
                    Arg::Int(n) => stmt.raw_bind_parameter(index, *n)?,
                }
            }
            let mut rows = stmt.raw_query();
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                out.push(map(&FastRow { row, names: &names, next: Cell::new(0) })?);
            }
            Ok(out)
        })
    }

    /// The first row of [`Self::query`], if any.
    pub fn query_opt<T>(
        &self,
        sql: &str,
        args: &[Arg],
        map: impl FnOnce(&FastRow<'_, '_>) -> StoreResult<T>,
    ) -> StoreResult<Option<T>> {
        let mut map = Some(map);
        let mut rows = self.query(sql, args, |r| match map.take() {
            Some(m) => m(r).map(Some),
            None => Ok(None),
        })?;
        Ok(if rows.is_empty() { None } else { rows.swap_remove(0) })
    }
}

/// A stored entity built from a row of either driver.
pub(crate) trait FromRow: Sized {
    fn from_row(r: &impl Get) -> StoreResult<Self>;
}

/// Reading a column by name from either kind of row, so one mapping function serves the sqlx
/// path and this one.
pub(crate) trait Get {
    fn get<T: Value>(&self, column: &str) -> StoreResult<T>;
}

/// A column type both drivers decode.
pub(crate) trait Value:
    for<'r> sqlx::Decode<'r, sqlx::Any> + sqlx::Type<sqlx::Any> + rusqlite::types::FromSql
{
}
impl<T: for<'r> sqlx::Decode<'r, sqlx::Any> + sqlx::Type<sqlx::Any> + rusqlite::types::FromSql> Value for T {}

impl Get for sqlx::any::AnyRow {
    fn get<T: Value>(&self, column: &str) -> StoreResult<T> {
        Ok(sqlx::Row::try_get(self, column)?)
    }
}

/// A row of this path. Columns are found by name as on the sqlx path, but without rusqlite's
/// case-insensitive scan of every column name per value (a quarter of a list's CPU in the
/// profile): mappers read columns mostly in select order, so the column after the last one read
/// is tried first.
pub struct FastRow<'a, 'r> {
    row: &'a rusqlite::Row<'r>,
    names: &'a [String],
    next: Cell<usize>,
}

impl FastRow<'_, '_> {
    fn index(&self, column: &str) -> StoreResult<usize> {
        let hint = self.next.get();
        let i = if self.names.get(hint).is_some_and(|n| n == column) {
            hint
        } else {
            self.names
                .iter()
                .position(|n| n == column)
                .ok_or_else(|| StoreError::Read(format!("no column {column} in the result")))?
        };
        self.next.set(i + 1);
        Ok(i)
    }
}

impl Get for FastRow<'_, '_> {
    fn get<T: Value>(&self, column: &str) -> StoreResult<T> {
        Ok(self.row.get(self.index(column)?)?)
    }
}
