# Accuracy check (needs numpy): a double-precision Lanczos-3 resize of the benchmark picture
# and of the zone plate with the same conventions, compared with ours (and ImageMagick).
# Usage: python3 bench/resample/reference.py [DIR]   (DIR: where run.sh left its files)
import numpy as np, sys
def readppm(p):
    d=open(p,'rb').read()
    parts=d.split(maxsplit=4)
    w,h=int(parts[1]),int(parts[2])
    return np.frombuffer(parts[4][:w*h*3],dtype=np.uint8).reshape(h,w,3).astype(np.float64)
def lanczos(x):
    x=np.asarray(x,dtype=np.float64); out=np.where(x==0,1.0,0.0)
    m=(np.abs(x)<3)&(x!=0); px=np.pi*x[m]; out[m]=3*np.sin(px)*np.sin(px/3)/(px*px); return out
def matrix(n,m):
    s=n/m; fs=max(s,1); M=np.zeros((m,n))
    for i in range(m):
        c=(i+0.5)*s-0.5; js=np.arange(int(np.floor(c-3*fs)),int(np.ceil(c+3*fs))+1)
        w=lanczos((js-c)/fs); w/=w.sum()
        np.add.at(M[i],np.clip(js,0,n-1),w)
    return M
import os; os.chdir(sys.argv[1] if len(sys.argv) > 1 else '/tmp/resample-bench')
def reference(name,tw,th):
    src=readppm(name); H,W,_=src.shape
    Mh=matrix(W,tw); Mv=matrix(H,th)
    return np.clip(np.stack([Mv@src[:,:,c]@Mh.T for c in range(3)],axis=2),0,255)
def psnr(a,b): return 10*np.log10(255**2/np.mean((a-b)**2))
ref=reference('12mp.ppm',2048,1536)
ours=readppm('12-2048-sse2.ppm'); im=readppm('im-2048.ppm')
print('ours vs double reference: %.2f dB, max diff %.2f'%(psnr(ours,ref),np.abs(ours-ref).max()))
print('ImageMagick vs double reference: %.2f dB'%psnr(im,ref))
print('ours vs ImageMagick: %.2f dB'%psnr(ours,im))
zref=reference('zone.ppm',2048,1536)
zone=readppm('zone-2048-sse2.ppm')
print('zone plate 4032x3024 -> 2048x1536, ours vs double reference: %.2f dB, max diff %.2f'%(psnr(zone,zref),np.abs(zone-zref).max()))
