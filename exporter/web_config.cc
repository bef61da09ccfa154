#include "exporter/web_config.h"

#include <crypt.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "base/yaml.h"

namespace nvmeof {
namespace {

bool ReadText(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

// exporter-toolkit's version names -> GnuTLS priority tokens.
bool TlsVersion(const std::string& name, int* rank) {
  static const std::map<std::string, int> kVersions = {
      {"TLS10", 0}, {"TLS11", 1}, {"TLS12", 2}, {"TLS13", 3}};
  auto it = kVersions.find(name);
  if (it == kVersions.end()) return false;
  *rank = it->second;
  return true;
}

}  // namespace

namespace {

// tls_server_config: the PEM files (relative to the web config's directory) and the TLS versions.
bool ParseTls(const YAML::Node& tls, const std::string& base_dir, WebConfig* config,
              std::string* error) {
  auto resolve = [&](const std::string& p) {
    return (p.empty() || p[0] == '/' || base_dir.empty()) ? p : base_dir + "/" + p;
  };
  if (!CheckKeys(
          tls, "tls_server_config",
          {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version",
           "max_version", "cipher_suites", "curve_preferences", "prefer_server_cipher_suites"},
          error, /*list_expected=*/false)) {
    return false;
  }
  const std::string cert = tls["cert_file"] ? resolve(tls["cert_file"].as<std::string>()) : "";
  const std::string key = tls["key_file"] ? resolve(tls["key_file"].as<std::string>()) : "";
  if (cert.empty() || key.empty()) {
    *error = "tls_server_config: cert_file and key_file are both required";
    return false;
  }
  if (!ReadText(cert, &config->cert_pem) || config->cert_pem.empty()) {
    *error = "tls_server_config.cert_file: cannot read \"" + cert + "\"";
    return false;
  }
  if (!ReadText(key, &config->key_pem) || config->key_pem.empty()) {
    *error = "tls_server_config.key_file: cannot read \"" + key + "\"";
    return false;
  }
  if (config->cert_pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    *error = "tls_server_config.cert_file: \"" + cert + "\" is not a PEM certificate";
    return false;
  }
  if (config->key_pem.find("PRIVATE KEY-----") == std::string::npos) {
    *error = "tls_server_config.key_file: \"" + key + "\" is not a PEM private key";
    return false;
  }
  if (const auto cat = tls["client_auth_type"]) {
    const auto v = cat.as<std::string>();
    if (v != "NoClientCert") {
      *error = "tls_server_config.client_auth_type: \"" + v +
               "\" is not supported (only NoClientCert); use basic auth or a proxy";
      return false;
    }
  }
  for (const char* unsupported : {"client_ca_file", "cipher_suites", "curve_preferences"}) {
    if (tls[unsupported]) {
      *error = std::string("tls_server_config.") + unsupported +
               ": not supported by this exporter (GnuTLS defaults apply); remove it";
      return false;
    }
  }
  int lo = 2, hi = 3;  // exporter-toolkit's default minimum is TLS 1.2
  if (tls["min_version"] && !TlsVersion(tls["min_version"].as<std::string>(), &lo)) {
    *error = "tls_server_config.min_version: expected TLS10, TLS11, TLS12 or TLS13";
    return false;
  }
  if (tls["max_version"] && !TlsVersion(tls["max_version"].as<std::string>(), &hi)) {
    *error = "tls_server_config.max_version: expected TLS10, TLS11, TLS12 or TLS13";
    return false;
  }
  if (lo > hi) {
    *error = "tls_server_config: min_version is above max_version";
    return false;
  }
  static const char* kGnutls[] = {"VERS-TLS1.0", "VERS-TLS1.1", "VERS-TLS1.2", "VERS-TLS1.3"};
  config->tls_priorities = "NORMAL:-VERS-ALL";
  for (int v = lo; v <= hi; ++v) config->tls_priorities += std::string(":+") + kGnutls[v];

  return true;
}

// http_server_config: extra response headers.
bool ParseHttp(const YAML::Node& http, WebConfig* config, std::string* error) {
  if (!CheckKeys(http, "http_server_config", {"http2", "headers"}, error,
                 /*list_expected=*/false))
    return false;
  if (const auto headers = http["headers"]) {
    if (!headers.IsMap()) {
      *error = "http_server_config.headers: expected a mapping";
      return false;
    }
    for (const auto& kv : headers) {
      const auto name = kv.first.as<std::string>();
      const auto value = kv.second.IsScalar() ? kv.second.Scalar() : "";
      if (name.find_first_of(":\r\n ") != std::string::npos ||
          value.find_first_of("\r\n") != std::string::npos) {
        *error = "http_server_config.headers." + name + ": invalid header";
        return false;
      }
      config->headers[name] = value;
    }
  }

  return true;
}

// basic_auth_users: user name -> bcrypt hash.
bool ParseUsers(const YAML::Node& users, WebConfig* config, std::string* error) {
  if (!users.IsMap()) {
    *error = "basic_auth_users: expected a mapping of user name to bcrypt hash";
    return false;
  }
  for (const auto& kv : users) {
    const auto name = kv.first.as<std::string>();
    const auto hash = kv.second.IsScalar() ? kv.second.Scalar() : "";
    if (name.empty() || name.find(':') != std::string::npos) {
      *error = "basic_auth_users: invalid user name \"" + name + "\"";
      return false;
    }
    const bool bcrypt = hash.size() == 60 && hash[0] == '$' && hash[1] == '2' &&
                        (hash[2] == 'a' || hash[2] == 'b' || hash[2] == 'y') && hash[3] == '$';
    if (!bcrypt) {
      *error = "basic_auth_users." + name + ": not a bcrypt hash ($2a$/$2b$/$2y$, 60 chars)";
      return false;
    }
    config->users[name] = hash;
  }

  return true;
}

bool ParseWebConfigOrThrow(const std::string& yaml_text, const std::string& base_dir,
                           WebConfig* config, std::string* error) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    *error = std::string("invalid YAML: ") + e.what();
    return false;
  }
  if (root.IsNull()) return true;
  if (!CheckKeys(root, "", {"tls_server_config", "http_server_config", "basic_auth_users"}, error,
                 /*list_expected=*/false)) {
    return false;
  }
  if (const auto tls = root["tls_server_config"]; tls && !ParseTls(tls, base_dir, config, error))
    return false;
  if (const auto http = root["http_server_config"]; http && !ParseHttp(http, config, error))
    return false;
  if (const auto users = root["basic_auth_users"]; users && !ParseUsers(users, config, error))
    return false;
  return true;
}

}  // namespace

bool ParseWebConfig(const std::string& yaml_text, const std::string& base_dir, WebConfig* config,
                    std::string* error) {
  try {
    return ParseWebConfigOrThrow(yaml_text, base_dir, config, error);
  } catch (const YAML::Exception& e) {  // e.g. a list where a string belongs
    *error = std::string("invalid value: ") + e.what();
    return false;
  }
}

bool LoadWebConfig(const std::string& path, WebConfig* config, std::string* error) {
  std::string text;
  if (!ReadText(path, &text)) {
    *error = "cannot read \"" + path + "\"";
    return false;
  }
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  return ParseWebConfig(text, dir, config, error);
}

bool VerifyBcrypt(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();  // ~32 KiB: keep it off the stack
  data->initialized = 0;
  const char* out = crypt_r(password.c_str(), hash.c_str(), data.get());
  if (!out || out[0] == '*') return false;
  const std::string_view got(out);
  if (got.size() != hash.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < hash.size(); ++i) diff |= static_cast<unsigned char>(got[i] ^ hash[i]);
  return diff == 0;
}

}  // namespace nvmeof
