# Writes OUT (gzip) and CHANGELOG.md.gz next to it: a Debian-format changelog for the package's version, which Debian policy
# wants as /usr/share/doc/<package>/changelog.gz; the project's history is CHANGELOG.md.gz.
# Run at build time (cmake -P) by deploy/packaging.cmake, after deploy/version.cmake.
file(STRINGS ${VERSION_FILE} version LIMIT_COUNT 1)
# The commit's date, so a rebuild of the same commit gives the same file.
execute_process(COMMAND git log -1 --format=%cD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE date OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT date)
  string(TIMESTAMP date "%a, %d %b %Y %H:%M:%S +0000" UTC)
endif()
string(REPLACE ".gz" "" text ${OUT})
file(WRITE ${text} "nvmeof-exporter (${version}) unstable; urgency=medium\n\n"
  "  * Built from the nvmeof_exporter source tree by CPack. The changes of each\n"
  "    release are in /usr/share/doc/nvmeof-exporter/CHANGELOG.md.gz.\n\n"
  " -- ${MAINTAINER}  ${date}\n")
execute_process(COMMAND gzip -9nf ${text} COMMAND_ERROR_IS_FATAL ANY)
get_filename_component(dir ${OUT} DIRECTORY)
execute_process(COMMAND gzip -9nc ${SOURCE_DIR}/CHANGELOG.md OUTPUT_FILE ${dir}/CHANGELOG.md.gz
                COMMAND_ERROR_IS_FATAL ANY)
