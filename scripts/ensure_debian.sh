#!/usr/bin/env bash
# Debian programs the project runs beside Python: `ensure_debian.sh PROGRAM=PACKAGE …` installs each package whose
# program is missing (PACKAGE may list several, comma-separated). Chromium for the browser tests (Playwright cannot download browsers here), HAProxy for serving
# a class on every core, Redis for a live class on several processes.
set -euo pipefail
missing=()
for pair in "$@"; do
  program=${pair%%=*} package=${pair#*=}
  package=${package//,/ }
  command -v "$program" >/dev/null 2>&1 || [ -x "$program" ] || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "Missing: ${missing[*]}. Install them with 'sudo apt-get install -y ${missing[*]}'." >&2
  exit 1
fi
echo "Installing Debian packages: ${missing[*]}…"
apt-get update -qq
# shellcheck disable=SC2068  # each entry may hold several package names
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${missing[@]} >/dev/null
