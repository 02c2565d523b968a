package vkprovider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/autoresearch-dev/autoresearch-operator/internal/vkprovider/containerinit"
)

// volumeDirs returns the host directory that backs each of the pod's
// volumes, writing ConfigMap and Secret contents under podDir.
func volumeDirs(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, podDir string) (map[string]string, error) {
	dirs := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		dir := filepath.Join(podDir, "volumes", v.Name)
		switch {
		case v.EmptyDir != nil:
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return nil, err
			}
		case v.ConfigMap != nil:
			cm, err := client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			data := map[string][]byte{}
			for k, s := range cm.Data {
				data[k] = []byte(s)
			}
			for k, b := range cm.BinaryData {
				data[k] = b
			}
			if err := writeItems(dir, data, v.ConfigMap.Items); err != nil {
				return nil, err
			}
		case v.Secret != nil:
			s, err := client.CoreV1().Secrets(pod.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			optional := v.Secret.Optional != nil && *v.Secret.Optional
			if err != nil && !optional {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			data := map[string][]byte{}
			if err == nil {
				data = s.Data
			}
			if err := writeItems(dir, data, v.Secret.Items); err != nil {
				return nil, err
			}
		case v.PersistentVolumeClaim != nil:
			d, err := claimDir(ctx, client, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			if err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			dir = d
		case v.Projected != nil:
			if err := writeProjected(ctx, client, pod, dir, v.Projected); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
		case v.HostPath != nil:
			dir = v.HostPath.Path
		default:
			return nil, fmt.Errorf("volume %s: only emptyDir, configMap, secret, projected, persistentVolumeClaim and hostPath volumes are supported", v.Name)
		}
		dirs[v.Name] = dir
	}
	return dirs, nil
}

// writeProjected writes a projected volume's ConfigMaps and service
// account token, as the default kube-api-access volume needs.
func writeProjected(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, dir string, v *corev1.ProjectedVolumeSource) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, src := range v.Sources {
		switch {
		case src.ConfigMap != nil:
			cm, err := client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, src.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			data := map[string][]byte{}
			for k, s := range cm.Data {
				data[k] = []byte(s)
			}
			if err := writeItems(dir, data, src.ConfigMap.Items); err != nil {
				return err
			}
		case src.ServiceAccountToken != nil:
			tr, err := client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{
					ExpirationSeconds: src.ServiceAccountToken.ExpirationSeconds,
					BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
				},
			}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, src.ServiceAccountToken.Path), []byte(tr.Status.Token), 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeItems writes the selected keys (all of them when items is empty)
// as files under dir.
func writeItems(dir string, data map[string][]byte, items []corev1.KeyToPath) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if len(items) == 0 {
		for k := range data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("key %q not found", it.Key)
		}
		p := filepath.Join(dir, it.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// claimDir is the local directory of the PersistentVolume bound to a claim.
func claimDir(ctx context.Context, client kubernetes.Interface, namespace, claim string) (string, error) {
	pvc, err := client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("claim %s is not bound", claim)
	}
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	switch {
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path, nil
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path, nil
	}
	return "", fmt.Errorf("volume %s is neither hostPath nor local", pv.Name)
}

// containerMounts turns a container's volume mounts into bind mounts,
// creating subPath directories as the kubelet does.
func containerMounts(c *corev1.Container, dirs map[string]string) ([]containerinit.Mount, error) {
	var mounts []containerinit.Mount
	for _, vm := range c.VolumeMounts {
		src, ok := dirs[vm.Name]
		if !ok {
			return nil, fmt.Errorf("container %s mounts unknown volume %s", c.Name, vm.Name)
		}
		if vm.SubPath != "" {
			src = filepath.Join(src, vm.SubPath)
			if _, err := os.Stat(src); os.IsNotExist(err) {
				if err := os.MkdirAll(src, 0o777); err != nil {
					return nil, err
				}
			}
		}
		mounts = append(mounts, containerinit.Mount{Source: src, Target: vm.MountPath, ReadOnly: vm.ReadOnly})
	}
	return mounts, nil
}
