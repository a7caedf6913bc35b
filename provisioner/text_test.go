package provisioner

import "testing"

// displayWords quotes exactly the words that are not plain.
func TestDisplayWords(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"/home/a/job.sbatch", "-p", "gpu", "--time=24:00:00"}, "/home/a/job.sbatch -p gpu --time=24:00:00"},
		{[]string{"/tmp/my job.sh", "--comment", "a\nb"}, `"/tmp/my job.sh" --comment "a\nb"`},
		{[]string{"", "x"}, "x"},
		{[]string{"s", ""}, `s ""`},
	} {
		if got := displayWords(c.in); got != c.want {
			t.Errorf("displayWords(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}
