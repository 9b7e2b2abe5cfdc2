#!/usr/bin/env bash
# Builds (once) and enters a Debian 13 root with LibTorch 2.6, to build and test flopsprof on LibTorch 2.x.
#   scripts/trixie_root.sh                  create the root if absent, then print where it is
#   scripts/trixie_root.sh CMD [ARG...]     create it if absent, then run CMD inside it (chroot, as root)
#   scripts/trixie_root.sh --bind SRC:DST CMD...   also bind-mount host dir SRC at DST inside (repeatable)
#   scripts/trixie_root.sh --remove         delete the root (and nothing else)
# Environment:
#   FLOPSPROF_TRIXIE_ROOT  where the root lives (default /var/cache/flopsprof/trixie; outside any checkout)
#   FLOPSPROF_MIRROR       Debian mirror (default: the host's, as its apt sources name it)
# Needs root (mmdebstrap, mount, chroot). /proc, /dev and the binds are mounted in a private mount namespace
# (unshare), so they vanish when the command ends even if it is killed, never leak to the host, and several runs
# may use the root at once; a trap unmounts them too.
set -euo pipefail

root_dir=${FLOPSPROF_TRIXIE_ROOT:-/var/cache/flopsprof/trixie}
# Keep in sync with what a build, the tests, the benchmarks and the FlopCounterMode cross-check need.
packages=(libtorch-dev g++ cmake make libfmt-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev libgloo-dev
          libopenblas0-openmp python3-torch python3-torchvision git ca-certificates
          python3-pandas python3-numpy python3-plotly python3-ijson python3-yaml python3-psutil
          python3-networkx python3-pydot)
stamp="$root_dir/.flopsprof-root"

die() { echo "trixie_root: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap, mount and chroot); run it with sudo"

host_mirror() {
  if [ -n "${FLOPSPROF_MIRROR:-}" ]; then echo "$FLOPSPROF_MIRROR"; return; fi
  local uri=""
  # deb822 sources first (Debian 12's default), then one-line sources; skip the security archive.
  uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | awk '{for (i = 2; i <= NF; i++) print $i}' | grep -v security | head -n1 || true)
  if [ -z "$uri" ]; then
    uri=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
          | sed 's/\[[^]]*\]//' | awk '{print $2}' | grep -v security | head -n1 || true)
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

create_root() {
  command -v mmdebstrap > /dev/null || {
    echo "trixie_root: installing mmdebstrap" >&2
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >&2
  }
  local mirror tmp
  mirror=$(host_mirror)
  mkdir -p "$(dirname "$root_dir")"
  # Build beside the final place and rename at the end: an interrupted run never leaves a half root in use.
  tmp="$root_dir.partial.$$"
  trap 'rm -rf --one-file-system "$tmp"' EXIT
  echo "trixie_root: creating $root_dir from $mirror (about 2 minutes)" >&2
  local joined
  joined=$(IFS=,; echo "${packages[*]}")
  mmdebstrap --quiet --variant=apt --include="$joined" trixie "$tmp" "$mirror" >&2
  printf '%s\n' "${packages[@]}" > "$tmp/.flopsprof-root"
  mv "$tmp" "$root_dir"
  trap - EXIT
}

if [ "${1:-}" = "--remove" ]; then
  if [ -d "$root_dir" ]; then
    # Refuse while anything is mounted below it (a run in progress outside a namespace).
    if grep -q " $root_dir/" /proc/self/mountinfo; then die "something is mounted under $root_dir; not removing"; fi
    rm -rf --one-file-system "$root_dir"
    echo "trixie_root: removed $root_dir"
  fi
  exit 0
fi

# Serialise creation between concurrent callers; reuse a complete root.
mkdir -p "$(dirname "$root_dir")"
exec 9> "$root_dir.lock"
flock 9
if [ ! -f "$stamp" ]; then
  [ ! -e "$root_dir" ] || die "$root_dir exists but is not a complete root; remove it with --remove"
  create_root
elif ! diff -q <(printf '%s\n' "${packages[@]}") "$stamp" > /dev/null; then
  # The package list grew since the root was made: add what is missing rather than rebuilding.
  echo "trixie_root: updating packages in $root_dir" >&2
  cp /etc/resolv.conf "$root_dir/etc/resolv.conf" 2>/dev/null || true
  unshare --mount --propagation private -- bash -c '
    mount -t proc proc "$1/proc" && mount --bind /dev "$1/dev" &&
    chroot "$1" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $2"' \
    _ "$root_dir" "${packages[*]}" >&2
  printf '%s\n' "${packages[@]}" > "$stamp"
fi
flock -u 9

binds=()
while [ "${1:-}" = "--bind" ]; do
  [ $# -ge 2 ] || die "--bind needs SRC:DST"
  binds+=("$2")
  shift 2
done

if [ $# -eq 0 ]; then
  echo "$root_dir"
  exit 0
fi

# Inside a private mount namespace: mount, run, unmount (the namespace's end unmounts whatever the trap missed).
if [ -z "${FLOPSPROF_IN_NAMESPACE:-}" ]; then
  export FLOPSPROF_IN_NAMESPACE=1
  exec unshare --mount --propagation private -- "$0" "${binds[@]/#/--bind=}" "$@"
fi
# Re-entered inside the namespace: binds arrive as --bind=SRC:DST.
while [[ "${1:-}" == --bind=* ]]; do
  binds+=("${1#--bind=}")
  shift
done

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null || true
  done
}
trap cleanup EXIT
mount_once() { # mount_once TARGET mount-args...: skips a target already mounted (idempotent)
  local target=$1
  shift
  mountpoint -q "$target" && return 0
  mount "$@" "$target"
  mounted+=("$target")
}
mount_once "$root_dir/proc" -t proc proc
mount_once "$root_dir/dev" --bind /dev
# /sys read as the host's: the CPU's cache levels (/sys/devices/system/cpu/cpu0/cache) that the
# cache-aware roofline measures
mkdir -p "$root_dir/sys"
mount_once "$root_dir/sys" --bind /sys
for b in "${binds[@]+"${binds[@]}"}"; do
  src=${b%%:*}
  dst=${b#*:}
  [ -d "$src" ] || die "--bind: $src is not a directory"
  mkdir -p "$root_dir$dst"
  mount_once "$root_dir$dst" --bind "$src"
done
cp /etc/resolv.conf "$root_dir/etc/resolv.conf" 2>/dev/null || true
set +e
chroot "$root_dir" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
  LANG=C.UTF-8 TERM="${TERM:-dumb}" "$@"
rc=$?
set -e
exit $rc
