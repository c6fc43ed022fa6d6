#!/usr/bin/env bash
# Makes a small certificate authority and one node certificate signed by it, with
# openssl, for Homeroom's tls+tcp:// addresses (docs/SECURITY.md, "TLS").
#
#   Deploy/tls-certs.sh <dir> [name-or-ip ...]
#
# Writes <dir>/ca.pem (give it to --tls-ca on nodes and clients), <dir>/ca.key (keep
# it offline), <dir>/node.pem and <dir>/node.key (--tls-cert, --tls-key). The node
# certificate names localhost and 127.0.0.1 plus every argument (a DNS name, or an
# IPv4/IPv6 address): a client checks that the address it dials is one of them.
# Keys are P-256, valid for 825 days; an existing ca.pem/ca.key in <dir> is reused,
# so run it again with another <dir> per node, copying ca.* there first.
set -euo pipefail
dir=${1:?usage: Deploy/tls-certs.sh <dir> [name-or-ip ...]}
shift
command -v openssl >/dev/null || { echo "tls-certs: openssl not found (apt-get install openssl; Deploy/bootstrap.sh does)" >&2; exit 1; }
mkdir -p "$dir"
umask 077
names="DNS:localhost,IP:127.0.0.1"
for name in "$@"; do
  if [[ $name =~ ^[0-9.]+$ || $name == *:* ]]; then names="$names,IP:$name"; else names="$names,DNS:$name"; fi
done
if [ ! -s "$dir/ca.pem" ] || [ ! -s "$dir/ca.key" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 825 \
    -subj "/CN=Homeroom CA" -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
fi
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -subj "/CN=${1:-localhost}" -keyout "$dir/node.key" -out "$dir/node.csr" 2>/dev/null
openssl x509 -req -in "$dir/node.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 825 \
  -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$names") \
  -out "$dir/node.pem" 2>/dev/null
rm -f "$dir/node.csr" "$dir/ca.srl"
chmod 644 "$dir/ca.pem" "$dir/node.pem"
echo "tls-certs: $dir/ca.pem, $dir/node.pem and $dir/node.key for $names" >&2
