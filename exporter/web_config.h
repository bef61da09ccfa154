// The web config file of Prometheus' exporter-toolkit (--web.config.file): TLS and basic auth.
// Same schema, so deployments reuse theirs; keys we cannot honour are errors, never ignored.
#pragma once

#include <map>
#include <string>

namespace nvmeof {

struct WebConfig {
  std::string cert_pem;        // tls_server_config.cert_file contents; empty = plain HTTP
  std::string key_pem;         // tls_server_config.key_file contents
  std::string tls_priorities;  // GnuTLS priority string from min_version/max_version
  std::map<std::string, std::string> users;    // basic_auth_users: name -> bcrypt hash
  std::map<std::string, std::string> headers;  // http_server_config.headers

  bool tls() const { return !cert_pem.empty(); }
};

// Reads and validates the file. Relative cert/key paths resolve against the file's directory,
// as in exporter-toolkit. On error returns false with a message naming the key.
bool LoadWebConfig(const std::string& path, WebConfig* config, std::string* error);
bool ParseWebConfig(const std::string& yaml_text, const std::string& base_dir, WebConfig* config,
                    std::string* error);

// bcrypt check through libcrypt's crypt_r; constant-time compare of the result.
bool VerifyBcrypt(const std::string& password, const std::string& hash);

}  // namespace nvmeof
