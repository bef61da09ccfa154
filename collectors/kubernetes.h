// The kubernetes collector's options (config section `kubernetes:`).
#pragma once

#include <memory>
#include <string>

#include "base/collector.h"

namespace YAML {
class Node;
}

namespace nvmeof {

struct CollectorOptions;  // collectors/collector_options.h

struct KubernetesOptions {
  // The kubelet's --root-dir as the host's mount table shows it. Distributions move it:
  // /var/snap/microk8s/common/var/lib/kubelet (microk8s), /var/lib/k0s/kubelet (k0s). Its files
  // are read at <--path.rootfs><kubelet_root>.
  std::string kubelet_root = "/var/lib/kubelet";
};

// The `kubernetes:` section on top of *options. Errors name the key:
// `kubernetes.kubelet_root: ...`.
bool ParseKubernetesOptions(const YAML::Node& section, KubernetesOptions* options,
                            std::string* error);

// The collector --collector.kubernetes names.
std::unique_ptr<Collector> NewKubernetesCollector(const CollectorOptions& options);

}  // namespace nvmeof
