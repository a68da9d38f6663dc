import os, subprocess, sys, glob
home=os.path.expanduser('~/.cache/bitonic')
stamp=os.path.getmtime('/tmp/kstamp2')
base=set(os.listdir('/tmp/basecache/bitonic'))
old={f.split('-sm_90-')[0]: os.path.join('/tmp/kc',f) for f in os.listdir('/tmp/kc') if f not in base}
new={f.split('-sm_90-')[0]: os.path.join(home,f) for f in os.listdir(home) if '-sm_90-' in f and os.path.getmtime(os.path.join(home,f))>stamp}
def sass(path):
    data=open(path,'rb').read()[24:]
    tmp='/tmp/sass.cubin'; open(tmp,'wb').write(data)
    out=subprocess.run(['/tmp/cuobj/nvidia/cu13/bin/cuobjdump','-sass',tmp],capture_output=True,text=True).stdout
    return [l for l in out.splitlines() if l.strip() and not l.startswith('\t\tcode for') and 'Fatbin' not in l and 'arch =' not in l and 'identifier' not in l]
same=diff=0
for m in sorted(new):
    if m not in old: print('no old', m); continue
    a,b=sass(old[m]),sass(new[m])
    if a==b: same+=1
    else: diff+=1; print('DIFF', m, len(a), len(b))
print(f'{len(new)} new modules, {len(old)} old; identical SASS {same}, different {diff}')
