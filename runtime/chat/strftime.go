package chat

import (
	"strconv"
	"strings"
	"time"
)

// strftime is Python's datetime.strftime in the C locale, as glibc does it,
// for the clock Hugging Face gives templates (strftime_now): a naive local
// time, so %z and %Z are empty. Glibc's "-" (no padding) and "_" (space
// padding) flags are honored; an unknown conversion is copied as written.
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		flag := byte(0)
		if f[i] == '-' || f[i] == '_' || f[i] == '0' {
			flag = f[i]
			if i+1 >= len(f) {
				b.WriteString(f[i-1:])
				break
			}
			i++
		}
		num := func(v, width int, pad byte) {
			s := strconv.Itoa(v)
			switch {
			case flag == '-':
			case flag == '_':
				pad = ' '
				fallthrough
			default:
				if flag == '0' {
					pad = '0'
				}
				for len(s) < width {
					s = string(pad) + s
				}
			}
			b.WriteString(s)
		}
		_, week := t.ISOWeek()
		switch f[i] {
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'c':
			b.WriteString(strftime(t, "%a %b %e %H:%M:%S %Y"))
		case 'C':
			num(t.Year()/100, 2, '0')
		case 'd':
			num(t.Day(), 2, '0')
		case 'D', 'x':
			b.WriteString(strftime(t, "%m/%d/%y"))
		case 'e':
			num(t.Day(), 2, ' ')
		case 'F':
			b.WriteString(strftime(t, "%Y-%m-%d"))
		case 'G':
			y, _ := t.ISOWeek()
			num(y, 4, '0')
		case 'H':
			num(t.Hour(), 2, '0')
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2, '0')
		case 'j':
			num(t.YearDay(), 3, '0')
		case 'k':
			num(t.Hour(), 2, ' ')
		case 'l':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2, ' ')
		case 'm':
			num(int(t.Month()), 2, '0')
		case 'M':
			num(t.Minute(), 2, '0')
		case 'n':
			b.WriteByte('\n')
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'R':
			b.WriteString(strftime(t, "%H:%M"))
		case 's':
			b.WriteString(strconv.FormatInt(t.Unix(), 10))
		case 'S':
			num(t.Second(), 2, '0')
		case 't':
			b.WriteByte('\t')
		case 'T', 'X':
			b.WriteString(strftime(t, "%H:%M:%S"))
		case 'u':
			num((int(t.Weekday())+6)%7+1, 1, '0')
		case 'U':
			num((t.YearDay()+6-int(t.Weekday()))/7, 2, '0')
		case 'V':
			num(week, 2, '0')
		case 'w':
			num(int(t.Weekday()), 1, '0')
		case 'W':
			num((t.YearDay()+6-(int(t.Weekday())+6)%7)/7, 2, '0')
		case 'y':
			num(t.Year()%100, 2, '0')
		case 'Y':
			num(t.Year(), 4, '0')
		case 'z', 'Z':
		case 'f':
			num(t.Nanosecond()/1000, 6, '0')
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			if flag != 0 {
				b.WriteByte(flag)
			}
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
