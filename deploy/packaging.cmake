# Installation layout and the Debian package. Included from CMakeLists.txt (after the
# nvmeof_exporter target and its simple install() rules).
#
#   cmake --install build --prefix X      X/bin, X/share/man/man1, X/share/nvmeof-exporter,
#                                         X/lib/systemd/system, X/etc/nvmeof_exporter
#   cmake --build build --target package  build/nvmeof-exporter_<version>_<arch>.deb: the same
#                                         with prefix /usr, so /etc and /lib/systemd/system
#
# The package version is read at package time from the file deploy/version.cmake writes at
# build time, so the .deb and the binary inside it always carry the same version.

set(NVMEOF_PACKAGE_MAINTAINER
    "nvmeof_exporter maintainers <maintainers@users.noreply.a-seed-735367a9.example>"
    CACHE STRING "Maintainer field of the Debian package")

# --- man page, from --help and --version. Optional: a build without help2man has none.
find_program(HELP2MAN help2man)
if(HELP2MAN)
  set(_man ${CMAKE_BINARY_DIR}/nvmeof_exporter.1)
  # -n: the NAME line; -N: no pointer to a Texinfo manual. help2man ends an option's bold at
  # the first dot (--web.listen-address); sed makes the whole flag bold. gzip -n: no timestamp.
  add_custom_command(OUTPUT ${_man}.gz
    COMMAND ${HELP2MAN} -N -s 1 -n "Prometheus exporter for NVMe-over-Fabrics and RDMA metrics"
            -o ${_man} $<TARGET_FILE:nvmeof_exporter>
    COMMAND sed -i [[s/\\fB\\-\\-\([a-z_]*\)\\fR\.\(\([a-z._]\|\\-\)*\)/\\fB\\-\\-\1.\2\\fR/g]] ${_man}
    COMMAND gzip -9nf ${_man}
    DEPENDS nvmeof_exporter COMMENT "Generating the man page (help2man)" VERBATIM)
  add_custom_target(nvmeof_man ALL DEPENDS ${_man}.gz)
  install(FILES ${_man}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "help2man not found: building without the man page "
                 "(deploy/install-deps.sh installs help2man)")
endif()

# --- systemd unit and example config. /usr is the one prefix whose configuration lives outside
# it (/etc, as GNUInstallDirs has it) and whose units go to /lib/systemd/system (Debian 12).
# Decided at install time, so that `cmake --install --prefix X` and the package (which installs
# with prefix /usr into a staging DESTDIR) both get an ExecStart naming the installed binary.
# An existing config is kept, as dpkg keeps a conffile.
set(_code [[
  if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(NVMEOF_SYSCONFDIR /etc)
    set(_unitdir /lib/systemd/system)
  else()
    set(NVMEOF_SYSCONFDIR ${CMAKE_INSTALL_PREFIX}/etc)
    set(_unitdir ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
  endif()
  set(NVMEOF_BINDIR ${CMAKE_INSTALL_PREFIX}/@CMAKE_INSTALL_BINDIR@)
  configure_file(@CMAKE_SOURCE_DIR@/deploy/systemd/nvmeof_exporter.service.in
                 @CMAKE_BINARY_DIR@/install/nvmeof_exporter.service @ONLY)
  file(INSTALL @CMAKE_BINARY_DIR@/install/nvmeof_exporter.service DESTINATION ${_unitdir})
  if(EXISTS "$ENV{DESTDIR}${NVMEOF_SYSCONFDIR}/nvmeof_exporter/config.yml")
    message(STATUS "Keeping: $ENV{DESTDIR}${NVMEOF_SYSCONFDIR}/nvmeof_exporter/config.yml")
  else()
    file(INSTALL @CMAKE_SOURCE_DIR@/deploy/config.yml
         DESTINATION ${NVMEOF_SYSCONFDIR}/nvmeof_exporter)
  endif()
]])
string(CONFIGURE "${_code}" _code @ONLY)
install(CODE "${_code}")

# --- the Debian package
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME nvmeof-exporter)
set(CPACK_PACKAGE_VENDOR "nvmeof_exporter")
set(CPACK_PACKAGE_CONTACT "${NVMEOF_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Prometheus exporter for NVMe-over-Fabrics and RDMA metrics")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "Serves per-stage NVMe-oF command latency (eBPF), RDMA port and hardware
counters, PFC pause and ECN counters, TCP retransmits and the NVMe-oF
host and target topology on /metrics. Ships a hardened systemd unit (not
enabled), Grafana dashboards and Prometheus alert and recording rules.")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends from the binary's shared libraries
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # nvmeof-exporter_<version>_<arch>.deb
set(CPACK_STRIP_FILES ON)
# Install with prefix /usr into DESTDIR=<staging>: the install code above then sees /usr.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
file(WRITE ${CMAKE_BINARY_DIR}/deb/conffiles "/etc/nvmeof_exporter/config.yml\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/deb/conffiles
    ${CMAKE_SOURCE_DIR}/deploy/debian/postinst ${CMAKE_SOURCE_DIR}/deploy/debian/prerm
    ${CMAKE_SOURCE_DIR}/deploy/debian/postrm)
# Package time: the version the binary was built with.
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/deb/version.cmake)
file(WRITE ${CPACK_PROJECT_CONFIG_FILE}
  "file(STRINGS \"${NVMEOF_VERSION_DIR}/nvmeof_version.txt\" CPACK_PACKAGE_VERSION LIMIT_COUNT 1)\n"
  "set(CPACK_DEBIAN_PACKAGE_VERSION \${CPACK_PACKAGE_VERSION})\n")

# Debian policy: /usr/share/doc/<package>/copyright and changelog.gz (Debian format, naming
# the version; deploy/debian/changelog.cmake), plus the project's CHANGELOG.md.
set(_doc ${CMAKE_BINARY_DIR}/deb)
add_custom_command(OUTPUT ${_doc}/changelog.gz ${_doc}/CHANGELOG.md.gz
  COMMAND ${CMAKE_COMMAND} -DVERSION_FILE=${NVMEOF_VERSION_DIR}/nvmeof_version.txt
          -DSOURCE_DIR=${CMAKE_SOURCE_DIR} -DOUT=${_doc}/changelog.gz
          -DMAINTAINER=${NVMEOF_PACKAGE_MAINTAINER} -P ${CMAKE_SOURCE_DIR}/deploy/debian/changelog.cmake
  DEPENDS ${NVMEOF_VERSION_DIR}/nvmeof_version.txt ${CMAKE_SOURCE_DIR}/CHANGELOG.md
          ${CMAKE_SOURCE_DIR}/deploy/debian/changelog.cmake
  VERBATIM)
add_custom_target(nvmeof_changelog ALL DEPENDS ${_doc}/changelog.gz ${_doc}/CHANGELOG.md.gz)
add_dependencies(nvmeof_changelog nvmeof_version_refresh)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/debian/copyright ${_doc}/changelog.gz
        ${_doc}/CHANGELOG.md.gz DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/nvmeof-exporter)
include(CPack)
