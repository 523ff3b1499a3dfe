#!/usr/bin/env bash
# Fetches Debian packages from the machine's own Debian source and unpacks them into a folder, installing nothing:
# `apt-get download` against a private apt state (its own lists, cache and sources, so the machine's are not touched),
# then `dpkg-deb -x` of each. The packages come with whatever installing them here would pull in (apt's own answer,
# given what the machine has). The source is the URI that serves the bookworm suite in /etc/apt/sources.list.d/*.sources
# (or /etc/apt/sources.list); bookworm-backports is reached through the same URI. Names no host. Usage:
#   bash .ci/debian-packages.sh DEST PACKAGE[/SUITE]...     e.g. mesa-vulkan-drivers/bookworm-backports libvulkan1
# Writes DEST/root (the unpacked files) and DEST/packages.txt (name=version, one a line); one line on stderr and
# exit 1 when a step fails. Used by .ci/lavapipe.sh (the CI's Vulkan driver) and bench/device-bundle.sh (the loader).
set -euo pipefail
fail() {
  echo "debian-packages: $*" >&2
  exit 1
}
[ $# -ge 2 ] || fail "usage: debian-packages.sh DEST PACKAGE[/SUITE]..."
dest=$1
shift
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || fail "needs apt-get and dpkg-deb (a Debian machine)"
uri=$(awk '/^URIs:/{u=$2} /^Suites:/{for(i=2;i<=NF;i++) if($i=="bookworm") print u}' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
[ -n "$uri" ] || uri=$(awk '$1=="deb" && $3=="bookworm"{print $2}' /etc/apt/sources.list 2>/dev/null | head -1)
[ -n "$uri" ] || fail "no Debian bookworm source in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list"
apt=$dest/apt
rm -rf "$apt" "$dest/root" && mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$dest/root"
key=/usr/share/keyrings/debian-archive-keyring.gpg
printf 'deb [signed-by=%s] %s bookworm main\ndeb [signed-by=%s] %s bookworm-backports main\n' "$key" "$uri" "$key" "$uri" >"$apt/sources.list"
opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent -o "Dir::State::Lists=$apt/lists"
  -o "Dir::Cache=$apt/cache" -o Debug::NoLocking=1 -o Acquire::Retries=3 -o Acquire::http::Timeout=60)
timeout 300 apt-get "${opts[@]}" update -qq >/dev/null 2>&1 || fail "apt-get update against $uri (bookworm, bookworm-backports) failed"
# The packages named (at their suite's version where installing them would take it) and what installing them would
# pull in besides, given what the machine has; download only.
extra=$(apt-get "${opts[@]}" -s install --no-install-recommends "$@" 2>/dev/null |
  awk '$1=="Inst"{v=$0; sub(/^[^(]*\(/,"",v); sub(/ .*/,"",v); print $2"="v}')
named=$(printf '%s\n' "$@" | sed 's#/.*##')
list=()
for p in "$@"; do
  at=$(echo "$extra" | grep "^${p%%/*}=" || true)
  list+=("${at:-$p}")
done
for e in $extra; do echo "$named" | grep -qx "${e%%=*}" || list+=("$e"); done
(cd "$apt/debs" && timeout 600 apt-get "${opts[@]}" download -qq "${list[@]}" >/dev/null 2>&1) || fail "apt-get download failed (${list[*]})"
for deb in "$apt/debs"/*.deb; do dpkg-deb -x "$deb" "$dest/root"; done
printf '%s\n' "${list[@]}" >"$dest/packages.txt"
rm -rf "$apt"
