module qoracle

go 1.24

require k8s.io/apimachinery v0.36.3
