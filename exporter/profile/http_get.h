// The HTTP client `top --from` reads a running exporter with.
#pragma once

#include <string>

namespace nvmeof::profile {

// Minimal HTTP/1.1 GET (http:// only; Content-Length, chunked or read-to-close bodies).
bool HttpGet(const std::string& url, double timeout_seconds, std::string* body, std::string* error);

}  // namespace nvmeof::profile
