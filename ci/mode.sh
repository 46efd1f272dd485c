# Sourced by ci/ scripts: run a build directory's tests in the mode STREAMCHECK_MODE asks for.
#
#   STREAMCHECK_MODE=fast ci/flake_check.sh build default_streams
#
# sc_use_mode BUILD_DIR: when STREAMCHECK_MODE is set (isolated or fast) and the build directory is configured
# for the other mode, reconfigures it (cmake -DSTREAMCHECK_MODE=..., which changes only the ctest entries,
# nothing is recompiled) and puts the old mode back when the script exits. Prints the mode used.
sc_configured_mode() {
  local mode
  mode=$(sed -n 's/^STREAMCHECK_MODE:STRING=//p' "$1/CMakeCache.txt" 2>/dev/null)
  echo "${mode:-isolated}"
}

sc_set_mode() {
  cmake -DSTREAMCHECK_MODE="$2" "$1" >/dev/null || {
    echo "mode: could not configure $1 for mode $2" >&2
    return 1
  }
}

sc_use_mode() {
  local build=$1 want=${STREAMCHECK_MODE:-} had
  had=$(sc_configured_mode "$build")
  if [ -z "$want" ] || [ "$want" = "$had" ]; then
    echo "mode: ${had} (the build directory's STREAMCHECK_MODE)"
    return 0
  fi
  case "$want" in
    isolated | fast) ;;
    *)
      echo "mode: STREAMCHECK_MODE must be isolated or fast, not '$want'" >&2
      return 2
      ;;
  esac
  sc_set_mode "$build" "$want" || return 1
  # shellcheck disable=SC2064  # the values are meant to be fixed now
  trap "sc_set_mode '$build' '$had'" EXIT
  echo "mode: ${want} (STREAMCHECK_MODE; $build goes back to ${had} at the end)"
}
