#!/bin/sh
# Creates the libSQL server (sqld) credentials compose.remote.yaml mounts, once: existing
# files are never rewritten (as deploy/compose-secrets.sh, which makes the broker tokens).
# Usage: deploy/sqld-secrets.sh [DIR]   (default ./secrets, gitignored)
#
# sqld authenticates Hrana/HTTP clients with JWTs signed by an Ed25519 key
# (--auth-jwt-key-file takes the PUBLIC key):
#   sqld-jwt.key          the private signing key, 0600; mounted nowhere (mint tokens with it)
#   sqld-jwt-public.pem   the public key both sqld containers verify with
#   mqlite-db-auth.token  a JWT for the broker (MQLITE_DB_AUTH_TOKEN); no expiry, like a
#                         Turso token created with `--expiration none`: rotate by deleting
#                         it and sqld-jwt.key, rerunning this, and restarting the stack
# The token and public key are 0644 in the 0700 directory for the reason compose-secrets.sh
# gives (a compose file secret is a bind mount that keeps host ownership). Needs openssl
# (Ed25519 signing: OpenSSL 1.1.1 or later) and python3 (JSON and base64url, stdlib only).
set -eu
dir=${1:-./secrets}
mkdir -p "$dir"
chmod 0700 "$dir"
umask 077
if [ ! -s "$dir/sqld-jwt.key" ]; then
  openssl genpkey -algorithm ed25519 -out "$dir/sqld-jwt.key.tmp"
  mv "$dir/sqld-jwt.key.tmp" "$dir/sqld-jwt.key"
  echo "created $dir/sqld-jwt.key"
fi
if [ ! -s "$dir/sqld-jwt-public.pem" ]; then
  openssl pkey -in "$dir/sqld-jwt.key" -pubout -out "$dir/sqld-jwt-public.pem.tmp"
  chmod 0644 "$dir/sqld-jwt-public.pem.tmp"
  mv "$dir/sqld-jwt-public.pem.tmp" "$dir/sqld-jwt-public.pem"
  echo "created $dir/sqld-jwt-public.pem"
fi
if [ ! -s "$dir/mqlite-db-auth.token" ]; then
  # header.payload, signed (EdDSA over the ASCII of both), base64url without padding.
  b64url() { python3 -c 'import base64, sys; print(base64.urlsafe_b64encode(sys.stdin.buffer.read()).rstrip(b"=").decode())'; }
  signing_input=$(printf '{"alg":"EdDSA","typ":"JWT"}' | b64url).$(python3 -c 'import json, time; print(json.dumps({"iat": int(time.time())}, separators=(",", ":")), end="")' | b64url)
  printf %s "$signing_input" >"$dir/.jwt-input.tmp"
  signature=$(openssl pkeyutl -sign -inkey "$dir/sqld-jwt.key" -rawin -in "$dir/.jwt-input.tmp" | b64url)
  rm -f "$dir/.jwt-input.tmp"
  printf '%s.%s\n' "$signing_input" "$signature" >"$dir/mqlite-db-auth.token.tmp"
  chmod 0644 "$dir/mqlite-db-auth.token.tmp"
  mv "$dir/mqlite-db-auth.token.tmp" "$dir/mqlite-db-auth.token"
  echo "created $dir/mqlite-db-auth.token"
fi
