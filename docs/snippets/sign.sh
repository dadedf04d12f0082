#!/usr/bin/env bash
# Tessera request signing with openssl.
#
#   usage: sign.sh SECRET TIMESTAMP METHOD PATH [BODY]
#
# Prints the lower-case hex HMAC-SHA256 of "<TIMESTAMP>.<METHOD>.<PATH>.<BODY>" under SECRET.
#   - TIMESTAMP is the x-white-label-timestamp header exactly as sent (Unix milliseconds);
#   - METHOD is upper-cased here;
#   - PATH is the request target exactly as sent, percent-encoding kept, with ?query if any;
#   - BODY is the exact bytes you send; an empty or absent body is signed as the two characters {}.
#
# Note: `openssl -hmac` takes the secret on the command line, where other local users may see it
# in the process list. Fine for a workstation; use a library (sign.py / sign.mjs) in services.
#
# Example: a hand-signed request with curl.
#
#   KEY_ID='wl_prv_...'; SECRET='...'
#   BODY='{"title":"Miss Ghana 2027","campaign_type":"voting"}'
#   TS=$(date +%s%3N)
#   NONCE=$(openssl rand -hex 16)
#   SIG=$(./sign.sh "$SECRET" "$TS" POST /api/white-label/v1/campaigns "$BODY")
#   curl -sS -X POST "http://127.0.0.1:8080/api/white-label/v1/campaigns" \
#     -H "content-type: application/json" \
#     -H "x-white-label-key-id: $KEY_ID" \
#     -H "x-white-label-timestamp: $TS" \
#     -H "x-white-label-nonce: $NONCE" \
#     -H "x-white-label-signature: $SIG" \
#     --data-binary "$BODY"
#
# Use --data-binary (not -d @file, which strips newlines) so the bytes sent are the bytes signed.
# A retry must be re-signed with a fresh TS and NONCE: nonces and signatures are single-use.
set -euo pipefail

if [ "$#" -lt 4 ] || [ "$#" -gt 5 ]; then
  echo "usage: $0 SECRET TIMESTAMP METHOD PATH [BODY]" >&2
  exit 2
fi

# tr rather than ${3^^}: the bash 3.2 shipped with macOS has no case conversion.
secret=$1 ts=$2 path=$4 body=${5:-}
method=$(printf '%s' "$3" | tr '[:lower:]' '[:upper:]')
[ -n "$body" ] || body='{}'

printf '%s' "$ts.$method.$path.$body" | openssl dgst -sha256 -hmac "$secret" | sed 's/^.* //'
