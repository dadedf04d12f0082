//! Sign-in and sign-out (D17.28, D17.43): `/console` without a session shows an e-mail field;
//! posting it mails a passcode and shows a passcode field; a right passcode sets the session
//! cookie and lands the person on their page. Sign-in forms carry a CSRF token bound to a
//! pre-session cookie; wrong input comes back with status 400 and the error beside its field.
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use minijinja::context;

use super::view::{render_raw, FieldErrors};
use super::{cookie, is_https, set_cookie, AnonPosted, ConsoleError, PageResult, Posted, COOKIE, PRE_COOKIE};
use crate::auth::sessions::new_token;
use crate::domain::console::member_email;
use crate::domain::portal::parse_code_try;
use crate::domain::time::now_ms;
use crate::flows::console as flow;
use crate::flows::customer_access::{AccessError, Verified};
use crate::http::envelope::request_id;
use crate::state::AppState;

/// The pre-session cookie lives as long as a sign-in may take.
const PRE_COOKIE_SECS: i64 = 3600;

struct SignInForm<'a> {
    email: &'a str,
    challenge_id: Option<&'a str>,
    errors: FieldErrors,
}

/// Renders the sign-in form (e-mail, or passcode once a challenge exists), setting the
/// pre-session cookie its CSRF token is bound to when the browser has none yet.
fn sign_in_page(state: &AppState, headers: &HeaderMap, status: StatusCode, form: SignInForm<'_>) -> Response {
    let (pre, fresh) = match cookie(headers, PRE_COOKIE) {
        Some(p) => (p.to_string(), false),
        None => (new_token(""), true),
    };
    let csrf = flow::csrf_token(state.keyring(), &format!("pre:{pre}"));
    let ctx = context! { csrf => csrf, email => form.email, challenge_id => form.challenge_id, errors => form.errors };
    let mut r = render_raw(status, "sign_in.html", ctx);
    if fresh {
        r.headers_mut()
            .append(header::SET_COOKIE, set_cookie(PRE_COOKIE, &pre, PRE_COOKIE_SECS, is_https(state, headers)));
    }
    r
}

/// GET /console without a session.
pub fn form(state: &AppState, headers: &HeaderMap) -> Response {
    sign_in_page(
        state,
        headers,
        StatusCode::OK,
        SignInForm { email: "", challenge_id: None, errors: FieldErrors::default() },
    )
}

/// POST /console/sign-in `{email, csrf}`: mails a passcode, shows the passcode field.
pub async fn start(axum::extract::State(state): axum::extract::State<AppState>, posted: AnonPosted) -> PageResult {
    let raw = posted.form.get("email");
    let email = match member_email("email", raw) {
        Ok(e) => e,
        Err(e) => {
            let form = SignInForm { email: raw, challenge_id: None, errors: FieldErrors::from_domain(&e) };
            return Ok(sign_in_page(&state, &posted.headers, StatusCode::BAD_REQUEST, form));
        }
    };
    let issued = flow::request_sign_in(&state.store, state.keyring(), &email, now_ms()).await?;
    let form = SignInForm { email: &email, challenge_id: Some(&issued.challenge_id), errors: FieldErrors::default() };
    Ok(sign_in_page(&state, &posted.headers, StatusCode::OK, form))
}

/// POST /console/sign-in/verify `{challenge, passcode, email, csrf}`: a right passcode sets the
/// session cookie and goes (303) to the person's landing page.
pub async fn verify(axum::extract::State(state): axum::extract::State<AppState>, posted: AnonPosted) -> PageResult {
    let f = &posted.form;
    let (email, challenge) = (f.get("email"), f.get("challenge"));
    let again = |message: String| {
        let mut errors = FieldErrors::default();
        errors.add("passcode", message);
        let form = SignInForm { email, challenge_id: Some(challenge), errors };
        Ok(sign_in_page(&state, &posted.headers, StatusCode::BAD_REQUEST, form))
    };
    let attempt = match parse_code_try(Some(challenge), Some(f.get("passcode"))) {
        Ok(a) => a,
        Err(_) => return again("Enter the 6 digits from the e-mail.".into()),
    };
    let opened = match flow::verify_sign_in(&state.store, state.keyring(), &attempt, Some(request_id()), now_ms()).await
    {
        Ok(o) => o,
        Err(AccessError::Refused(Verified::Wrong { remaining })) if remaining > 0 => {
            return again(format!(
                "The passcode does not match; {remaining} {} left.",
                if remaining == 1 { "try" } else { "tries" }
            ))
        }
        Err(AccessError::Refused(_) | AccessError::NotFound(_) | AccessError::NoMember) => {
            return again("This passcode can no longer be used; use another e-mail or request a new passcode.".into())
        }
        Err(e) => return Err(e.into()),
    };
    let mut r = opened_session(&state, &posted.headers, &opened);
    let secure = is_https(&state, &posted.headers);
    r.headers_mut().append(header::SET_COOKIE, set_cookie(PRE_COOKIE, "", 0, secure));
    Ok(r)
}

/// A session just opened (sign-in, a switch): its cookie, and 303 to its holder's landing page.
fn opened_session(state: &AppState, headers: &HeaderMap, opened: &flow::SignedIn) -> Response {
    let max_age = (opened.expires_at - now_ms()) / 1000;
    let mut r = Redirect::to(opened.landing().path()).into_response();
    let cookie = set_cookie(COOKIE, &opened.token, max_age, is_https(state, headers));
    r.headers_mut().append(header::SET_COOKIE, cookie);
    r
}

/// POST /console/switch `{csrf, member}`: the session moves to another of the person's
/// memberships (the header's account list) and lands on that role's page; the account already
/// open (an empty `member`) changes nothing. Another person's member id: 404.
pub async fn switch(
    axum::extract::State(state): axum::extract::State<AppState>,
    headers: HeaderMap,
    posted: Posted,
) -> PageResult {
    let (caller, member) = (&posted.caller, posted.form.get("member"));
    if member.is_empty() || caller.member().is_some_and(|m| m.id == member) {
        return Ok(Redirect::to(caller.landing().path()).into_response());
    }
    let (now, rid) = (now_ms(), Some(request_id()));
    let opened =
        flow::switch(&state.store, state.keyring(), &caller.signed, &caller.accounts, member, rid, now).await?;
    Ok(opened_session(&state, &headers, &opened))
}

/// POST /console/sign-out `{csrf}`: the session ends; back to the sign-in form.
pub async fn sign_out(axum::extract::State(state): axum::extract::State<AppState>, posted: Posted) -> PageResult {
    flow::sign_out(&state.store, &posted.caller.signed, Some(request_id()), now_ms())
        .await
        .map_err(ConsoleError::from)?;
    let mut r = Redirect::to("/console").into_response();
    r.headers_mut().append(header::SET_COOKIE, set_cookie(COOKIE, "", 0, false));
    Ok(r)
}
