# What `cmake --install` puts where, and the .deb CPack makes of it (docs/install.md).
# Included once from the top-level CMakeLists.txt. Production things only: the faultline
# binary and its data, never faultline-sim, the fake NVML/AMD SMI libraries or tests.
#
#   cmake --install BUILD [--prefix P]       (P defaults to /usr/local; the .deb uses /usr)
#     P/bin/faultline
#     P/share/faultline/kb/                  kb/; `faultline ask` looks beside its bin/ first
#     P/share/man/man1/faultline*.1.gz       from faultline --help (scripts/gen-man.sh)
#     P/share/doc/faultline/                 copyright, changelog.gz
#     ETC/faultline/agent.toml               deploy/config/faultline.toml; an existing one is kept
#     LIB/systemd/system/faultline-agent.service   deploy/systemd/, naming the installed paths
#   ETC is /etc and LIB is /lib for P=/usr (where Debian puts them), else P/etc and P/lib.
#   Installing copies what was built: build `faultline faultline_dist` first (`make package` does).
#
#   cpack --config BUILD/CPackConfig.cmake  ->  faultline_<version>_<arch>.deb (`make package`)

include(GNUInstallDirs)

# A shared-modules build (the sanitizer build) would need its module libraries installed too;
# it exists for tests, so it gets no install rules rather than a binary that cannot start.
if(FAULTLINE_SHARED_MODULES)
  message(STATUS "faultline: no install rules in a FAULTLINE_SHARED_MODULES build")
  return()
endif()

set(FAULTLINE_PACKAGE_MAINTAINER "faultline maintainers <faultline@example.com>"
    CACHE STRING "Maintainer of the .deb (Debian's Maintainer field): set your own when you publish it")
set(FAULTLINE_DIST_DIR ${PROJECT_BINARY_DIR}/dist)

# --- faultline_dist: the generated files the install copies --------------------------------
find_program(FAULTLINE_GZIP gzip REQUIRED)

# A Debian changelog (the .deb must carry one); dated by SOURCE_DATE_EPOCH when set, else today.
string(TIMESTAMP _faultline_day "%a, %d %b %Y 00:00:00 +0000" UTC)
string(CONCAT _faultline_changelog "faultline (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
  "  * Built from the faultline source tree; its git history lists the changes.\n\n"
  " -- ${FAULTLINE_PACKAGE_MAINTAINER}  ${_faultline_day}\n")
# Rewritten only when it changes (file(CONFIGURE) would also expand an @x@ in the maintainer).
set(_faultline_old "")
if(EXISTS ${FAULTLINE_DIST_DIR}/changelog)
  file(READ ${FAULTLINE_DIST_DIR}/changelog _faultline_old)
endif()
if(NOT _faultline_old STREQUAL _faultline_changelog)
  file(WRITE ${FAULTLINE_DIST_DIR}/changelog "${_faultline_changelog}")
endif()
add_custom_command(OUTPUT ${FAULTLINE_DIST_DIR}/changelog.gz
  COMMAND ${FAULTLINE_GZIP} -9nkf ${FAULTLINE_DIST_DIR}/changelog
  DEPENDS ${FAULTLINE_DIST_DIR}/changelog VERBATIM)
set(_faultline_dist_outputs ${FAULTLINE_DIST_DIR}/changelog.gz)

# Man pages come from running the binary, which a cross build can do only through an emulator.
if(CMAKE_CROSSCOMPILING AND NOT CMAKE_CROSSCOMPILING_EMULATOR)
  message(STATUS "faultline: no man pages (cross build without CMAKE_CROSSCOMPILING_EMULATOR)")
else()
  add_custom_command(OUTPUT ${FAULTLINE_DIST_DIR}/man/faultline.1.gz
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/gen-man.sh ${FAULTLINE_DIST_DIR}/man ${PROJECT_VERSION}
            -- ${CMAKE_CROSSCOMPILING_EMULATOR} $<TARGET_FILE:faultline>
    DEPENDS faultline ${PROJECT_SOURCE_DIR}/scripts/gen-man.sh
    COMMENT "Generating man pages from faultline --help" VERBATIM)
  list(APPEND _faultline_dist_outputs ${FAULTLINE_DIST_DIR}/man/faultline.1.gz)
  install(DIRECTORY ${FAULTLINE_DIST_DIR}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
    FILES_MATCHING PATTERN "*.1.gz")
endif()
add_custom_target(faultline_dist ALL DEPENDS ${_faultline_dist_outputs})

# --- install rules ---------------------------------------------------------------------------
set(_faultline_file_mode OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
install(TARGETS faultline RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/kb/ DESTINATION ${CMAKE_INSTALL_DATADIR}/faultline/kb
  FILE_PERMISSIONS ${_faultline_file_mode})
install(FILES ${PROJECT_SOURCE_DIR}/deploy/package/copyright ${FAULTLINE_DIST_DIR}/changelog.gz
  DESTINATION ${CMAKE_INSTALL_DOCDIR} PERMISSIONS ${_faultline_file_mode})

# The config and the unit name installed paths, known only at install time (cpack installs
# with prefix /usr whatever the build was configured with), so they are written then.
install(CODE "set(_faultline_source_dir \"${PROJECT_SOURCE_DIR}\")
set(_faultline_scratch \"${FAULTLINE_DIST_DIR}/install\")
set(_faultline_bindir \"${CMAKE_INSTALL_BINDIR}\")
set(_faultline_datadir \"${CMAKE_INSTALL_DATADIR}\")
set(_faultline_sysconfdir \"${CMAKE_INSTALL_SYSCONFDIR}\")
set(_faultline_strip \"${CMAKE_STRIP}\")")
install(CODE [[
  set(_prefix "${CMAKE_INSTALL_PREFIX}")
  if(IS_ABSOLUTE "${_faultline_sysconfdir}")
    set(_etc "${_faultline_sysconfdir}")
  elseif(_prefix STREQUAL "/usr")
    set(_etc "/etc")
  else()
    set(_etc "${_prefix}/${_faultline_sysconfdir}")
  endif()
  set(_unitdir "${_prefix}/lib/systemd/system")
  if(_prefix STREQUAL "/usr")
    set(_unitdir "/lib/systemd/system")
  endif()
  cmake_path(ABSOLUTE_PATH _faultline_bindir BASE_DIRECTORY "${_prefix}" OUTPUT_VARIABLE _bindir)
  cmake_path(ABSOLUTE_PATH _faultline_datadir BASE_DIRECTORY "${_prefix}" OUTPUT_VARIABLE _datadir)

  # A stripped install (cpack, cmake --install --strip) also drops the compiler's notes, as
  # Debian's dh_strip does: nothing reads them at run time.
  if(CMAKE_INSTALL_DO_STRIP AND _faultline_strip)
    execute_process(COMMAND "${_faultline_strip}" --remove-section=.comment --remove-section=.note
      "$ENV{DESTDIR}${_bindir}/faultline" COMMAND_ERROR_IS_FATAL ANY)
  endif()

  # Writes TEXT as DIR/NAME (mode 0644) through file(INSTALL): DESTDIR, manifest and messages
  # as for every other file. The scratch copy is private to this run (a root install must not
  # leave root-owned files in the build tree).
  string(RANDOM LENGTH 12 _run)
  set(_scratch "${_faultline_scratch}-${_run}")
  function(_faultline_install_text dir name text)
    file(WRITE "${_scratch}/${name}" "${text}")
    file(INSTALL DESTINATION "${dir}" TYPE FILE FILES "${_scratch}/${name}"
      PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
    set(CMAKE_INSTALL_MANIFEST_FILES "${CMAKE_INSTALL_MANIFEST_FILES}" PARENT_SCOPE)
  endfunction()

  file(READ "${_faultline_source_dir}/deploy/config/faultline.toml" _config)
  string(REPLACE "/usr/share/faultline/kb" "${_datadir}/faultline/kb" _config "${_config}")
  string(REPLACE "/etc/faultline/" "${_etc}/faultline/" _config "${_config}")
  if(EXISTS "$ENV{DESTDIR}${_etc}/faultline/agent.toml")
    message(STATUS "Keeping: $ENV{DESTDIR}${_etc}/faultline/agent.toml (yours; the default is deploy/config/faultline.toml)")
  else()
    _faultline_install_text("${_etc}/faultline" agent.toml "${_config}")
  endif()

  file(READ "${_faultline_source_dir}/deploy/systemd/faultline-agent.service" _unit)
  string(FIND "${_unit}" "[Unit]" _start)
  string(SUBSTRING "${_unit}" ${_start} -1 _unit)  # the manual install steps above it do not apply
  string(REPLACE "/usr/local/bin/faultline" "${_bindir}/faultline" _unit "${_unit}")
  string(REPLACE "/etc/faultline/" "${_etc}/faultline/" _unit "${_unit}")
  if(NOT _unit MATCHES "\nDocumentation=")  # `systemctl status` points at the man page
    string(REGEX REPLACE "(\nDescription=[^\n]*)" "\\1\nDocumentation=man:faultline-agent(1)" _unit "${_unit}")
  endif()
  string(FIND "${_unit}" "ExecStart=${_bindir}/faultline agent --config ${_etc}/faultline/agent.toml" _found)
  if(_found EQUAL -1)
    message(FATAL_ERROR "deploy/systemd/faultline-agent.service: no ExecStart=/usr/local/bin/faultline agent "
      "--config /etc/faultline/agent.toml to point at ${_bindir} (cmake/Install.cmake rewrites that line)")
  endif()
  _faultline_install_text("${_unitdir}" faultline-agent.service
    "# faultline agent as a systemd service (docs/install.md, docs/deploy.md). Installed, not
# enabled: set up ${_etc}/faultline/agent.toml first, then systemctl enable --now faultline-agent
${_unit}")
  file(REMOVE_RECURSE "${_scratch}")
]])

# --- the .deb --------------------------------------------------------------------------------
file(CONFIGURE OUTPUT ${FAULTLINE_DIST_DIR}/deb/conffiles CONTENT "/etc/faultline/agent.toml\n")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME faultline)
set(CPACK_PACKAGE_VENDOR "the faultline authors")
set(CPACK_PACKAGE_CONTACT "${FAULTLINE_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU node fault diagnosis: agent and CLI")
set(CPACK_PACKAGE_DESCRIPTION
  "faultline finds why a GPU node got slow or failed. It reads the kernel log,
NVML, AMD SMI, PCIe/InfiniBand/Ethernet sysfs, the BMC (Redfish) and
dcgm-exporter, and names the root cause with its evidence and the action it
calls for.
.
This package holds the faultline command (scan, diagnose, agent, ask, check
and more), its runbook knowledge base, man pages, a default agent
configuration that acts on nothing (a dry run), and the faultline-agent
systemd unit, installed but not enabled.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES TRUE)  # the debug info is most of the binary's size
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${FAULTLINE_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends from the libraries the binary links (dpkg-shlibdeps)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/deploy/package/postinst ${PROJECT_SOURCE_DIR}/deploy/package/prerm
  ${FAULTLINE_DIST_DIR}/deb/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
