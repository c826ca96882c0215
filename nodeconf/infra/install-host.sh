#!/usr/bin/env bash
# Install the host packages listed in infra/host-packages.txt that are missing (apt, as root);
# otherwise print one line saying what to install. Also makes sure apt's package lists exist,
# since the image build resolves the kernel and busybox packages with apt-cache.
set -euo pipefail
list="$(dirname "$0")/host-packages.txt"
mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$list")

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "nodeconf: not a Debian host; install the equivalents of: ${packages[*]}" >&2
    exit 1
fi
missing=()
for package in "${packages[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)"
    [[ "$status" == "install ok installed" ]] || missing+=("$package")
done
have_lists=false
compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null && have_lists=true

if [[ ${#missing[@]} -eq 0 && $have_lists == true ]]; then
    echo "nodeconf: host packages present (${packages[*]})"
    exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
    if [[ ${#missing[@]} -gt 0 ]]; then
        echo "nodeconf: missing host packages; run: sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    else
        echo "nodeconf: apt has no package lists; run: sudo apt-get update" >&2
    fi
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "nodeconf: installing ${missing[*]}"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "nodeconf: host packages present (${packages[*]})"
