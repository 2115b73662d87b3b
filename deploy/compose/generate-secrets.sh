#!/bin/sh
# Creates every secret the compose stack reads, for its first start:
#   ./generate-secrets.sh [DIR]        (DIR defaults to ./secrets beside this script)
# the encryption key (base64 of 32 random bytes), a bearer token per loom service identity and
# for the operator, the PostgreSQL password and the loom database URL that carries it, the
# Neo4j passwords, and the NATS token with the server's authorization file that carries it.
# Existing files are kept, so running it again changes nothing: delete a file to replace it
# (docs/operations.md says how to rotate each). The directory is 0700; the files are 0644
# because compose bind-mounts them as they are and loom runs as uid 10001 in the container,
# while the directory keeps other users of this host out.
set -eu
dir=${1:-$(dirname "$0")/secrets}
mkdir -p "$dir"
chmod 0700 "$dir"

random_base64() { head -c "$1" /dev/urandom | base64 | tr -d '\n'; }
random_token() { head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n'; }

# write NAME COMMAND...: the command's output becomes the file, unless the file exists
write() {
  name=$1
  shift
  if [ -e "$dir/$name" ]; then
    echo "kept    $dir/$name"
    return
  fi
  "$@" > "$dir/.$name.tmp"
  chmod 0644 "$dir/.$name.tmp"
  mv "$dir/.$name.tmp" "$dir/$name"
  echo "created $dir/$name"
}

write encryption-key random_base64 32
# the identities that call another service (audit calls none) and the operator
for identity in config-store scheduler executor skill-gateway secrets operator; do
  write "token-$identity" random_token
done
write postgres-password random_token
database_url() { printf 'postgresql://loom:%s@postgres:5432/loom' "$(cat "$dir/postgres-password")"; }
neo4j_auth() { printf 'neo4j/%s' "$(random_token)"; }
write database-url database_url
write neo4j-auth neo4j_auth
write neo4j-nlp-auth neo4j_auth
# the token of the NATS server: the executor reads nats-token, the server includes nats-auth.conf
write nats-token random_token
nats_auth() { printf 'authorization {\n  token: "%s"\n}\n' "$(cat "$dir/nats-token")"; }
write nats-auth.conf nats_auth
# the password of loom_sso, the database user that impersonates signed-in users (docker-compose.sso.yml)
write neo4j-sso-password random_token
