package vkprovider

import (
	"context"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// Provisioner gives each pending claim of its StorageClass a hostPath
// PersistentVolume under Dir, pre-bound to the claim; the control plane's
// volume binder completes the binding.
type Provisioner struct {
	Client       kubernetes.Interface
	StorageClass string
	Dir          string
	Interval     time.Duration
}

// Run provisions until ctx ends.
func (p Provisioner) Run(ctx context.Context) {
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	for {
		if err := p.provisionAll(ctx); err != nil {
			klog.ErrorS(err, "Provisioning volumes")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p Provisioner) provisionAll(ctx context.Context) error {
	claims, err := p.Client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.Spec.VolumeName != "" || c.DeletionTimestamp != nil || c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != p.StorageClass {
			continue
		}
		if err := p.provision(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// provision creates the claim's directory and volume.
func (p Provisioner) provision(ctx context.Context, c *corev1.PersistentVolumeClaim) error {
	name := "pvc-" + string(c.UID)
	dir := filepath.Join(p.Dir, c.Namespace+"-"+c.Name+"-"+string(c.UID))
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: c.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   c.Spec.AccessModes,
			StorageClassName:              p.StorageClass,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace, Name: c.Name, UID: c.UID},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
		},
	}
	_, err := p.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		klog.InfoS("Provisioned volume", "claim", klog.KObj(c), "volume", name, "dir", dir)
	}
	return err
}
